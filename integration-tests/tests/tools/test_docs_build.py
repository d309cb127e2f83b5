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


def code_blocks(markdown: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", markdown, re.S)


def test_install_page_uses_uv_pip_after_uv_venv():
    """In an environment made by ``uv venv`` there is no pip: a bare ``pip`` would be the global
    Python's, so a block that makes one installs with ``uv pip``."""
    page = (ROOT / "docs" / "install.md").read_text()
    checked = 0
    for block in code_blocks(page):
        lines = [line.strip() for line in block.splitlines()]
        made = [i for i, line in enumerate(lines) if line.startswith("uv venv")]
        if not made:
            continue
        installs = [line for line in lines[made[0] :] if line.split()[1:2] == ["install"]]
        installs += [line for line in lines[made[0] :] if line.startswith("uv pip install")]
        assert installs, block
        assert all(line.startswith("uv pip install") for line in installs), block
        checked += 1
    assert checked


def test_readme_package_table_does_not_present_unpublished_packages_as_installable():
    readme = (ROOT / "README.md").read_text()
    table = [line for line in readme.splitlines() if line.startswith("| [rl-")]
    assert len(table) == 7
    header = next(line for line in readme.splitlines() if line.startswith("| package |"))
    assert "once published" in header
    assert "None of the seven is published yet" in readme
