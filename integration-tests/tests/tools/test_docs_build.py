"""The documentation build CI runs: strict, with nothing that hides its warnings, and the
benchmarks page's plots present where the site serves them (docs/_site_files.py)."""

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def mkdocs_build_commands() -> list[list[str]]:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [
        shlex.split(line) for line in lines if "mkdocs build" in line and not line.startswith("#")
    ]


def test_ci_builds_the_site_strictly_with_every_warning_shown():
    commands = mkdocs_build_commands()
    assert len(commands) == 1, commands
    words = commands[0]
    assert "--strict" in words
    # --quiet (or -q) lowers mkdocs' log level below WARNING: --strict then counts nothing
    assert not {"--quiet", "-q"} & set(words), words


def test_the_benchmarks_page_images_exist_where_the_site_serves_them():
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert images
    for link in images:
        assert link.startswith("results/"), link
        assert link.endswith(".png"), link
        assert (ROOT / "benchmarks" / link).is_file(), link
