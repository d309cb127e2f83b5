"""MkDocs hook: files the site takes from outside ``docs/``.

- The benchmarks page includes ``benchmarks/README.md``, whose plots are linked as
  ``results/<group>.png``: each PNG of ``benchmarks/results/`` is served at that path, so the
  links resolve on the site as they do on the repository's page.
- Each package's page (``packages/<package>.md``) is its ``README.md``, so the site and the
  repository say the same thing: the README's links to ``docs/`` pages point to the site's
  pages, the benchmarks READMEs to the benchmarks page, and other repository files stay as
  their paths in code (the site does not carry them). A link to the package's API reference
  closes the page.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK_RESULTS = ROOT / "benchmarks" / "results"
PACKAGES = {
    "rl-core": "rl_core",
    "rl-envs": "rl_envs",
    "rl-buffers": "rl_buffers",
    "rl-collectors": "rl_collectors",
    "rl-objectives": "rl_objectives",
    "rl-llm": "rl_llm",
    "rl-kernels": "rl_kernels",
}
LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")


def site_link(target: str, package: str) -> str | None:
    """Where a link of ``packages/<package>/README.md`` points on the site, relative to the
    package's page; ``None`` for a repository file the site does not carry."""
    if target.startswith(("#", "http://", "https://", "mailto:")):
        return target
    path, _, anchor = target.partition("#")
    repo_path = posixpath.normpath(posixpath.join("packages", package, path))
    if repo_path.startswith("docs/"):
        page = repo_path.removeprefix("docs/")
    elif repo_path.startswith("benchmarks/") and repo_path.endswith("README.md"):
        page = "benchmarks.md"
    else:
        return None
    link = posixpath.relpath(page, "packages")
    return f"{link}#{anchor}" if anchor else link


def package_page(package: str) -> str:
    """``packages/<package>/README.md`` with its links made the site's, and the API link."""
    readme = (ROOT / "packages" / package / "README.md").read_text()

    def relink(match: re.Match) -> str:
        target = site_link(match["target"], package)
        if target is not None:
            return f"[{match['text']}]({target})"
        path = posixpath.normpath(posixpath.join("packages", package, match["target"]))
        return f"{match['text']} (`{path}` in the repository)"

    body = LINK.sub(relink, readme).rstrip()
    import_name = PACKAGES[package]
    return f"{body}\n\n**API reference:** [`{import_name}`](../api/{import_name}/index.md).\n"


def on_files(files, config):
    for package in PACKAGES:
        files.append(
            File.generated(config, f"packages/{package}.md", content=package_page(package))
        )
    for png in sorted(BENCHMARK_RESULTS.glob("*.png")):
        files.append(File.generated(config, f"results/{png.name}", abs_src_path=str(png)))
    return files
