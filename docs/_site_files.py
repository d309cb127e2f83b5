"""MkDocs hook: files the site takes from outside ``docs/``.

- The benchmarks page includes ``benchmarks/README.md``, whose plots are linked as
  ``results/<group>.png``: each PNG of ``benchmarks/results/`` is served at that path, so the
  links resolve on the site as they do on the repository's page.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK_RESULTS = ROOT / "benchmarks" / "results"


def on_files(files, config):
    for png in sorted(BENCHMARK_RESULTS.glob("*.png")):
        files.append(File.generated(config, f"results/{png.name}", abs_src_path=str(png)))
    return files
