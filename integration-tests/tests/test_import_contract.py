"""The import contract in `.importlinter` holds on the tree, and breaks when a sibling imports
another sibling, even lazily inside a function."""

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed")


def _copy_sources(tmp_path: Path) -> list[Path]:
    roots = []
    for src in sorted((ROOT / "packages").glob("*/src")):
        dest = tmp_path / src.parent.name
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
        roots.append(dest)
    return roots


def _lint(tmp_path: Path, roots: list[Path]) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": ":".join(map(str, roots)), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / ".importlinter"), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_contract_holds_on_the_tree(tmp_path):
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    contracts = [s for s in config.sections() if s.startswith("importlinter:contract:")]
    assert len(contracts) >= 6, contracts
    result = _lint(tmp_path, _copy_sources(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(contracts)} kept, 0 broken" in result.stdout


def test_an_import_circle_inside_a_folder_breaks_the_contract(tmp_path):
    roots = _copy_sources(tmp_path)
    folder = tmp_path / "rl-buffers" / "rl_buffers" / "samplers"
    (folder / "_first.py").write_text("def f():\n    from . import _second\n")
    (folder / "_second.py").write_text("from . import _first\n")
    result = _lint(tmp_path, roots)
    assert result.returncode != 0
    assert "no import circles inside any folder of any package BROKEN" in result.stdout
    assert "rl_buffers.samplers" in result.stdout


def test_lazy_sibling_import_breaks_the_contract(tmp_path):
    roots = _copy_sources(tmp_path)
    bad = tmp_path / "rl-envs" / "rl_envs" / "_sneaky.py"
    bad.write_text("def load():\n    import rl_buffers\n    return rl_buffers\n")
    result = _lint(tmp_path, roots)
    assert result.returncode != 0
    assert "the six siblings are independent of one another BROKEN" in result.stdout
    assert "rl_envs._sneaky -> rl_buffers" in result.stdout


def test_core_importing_a_sibling_breaks_the_contract(tmp_path):
    roots = _copy_sources(tmp_path)
    (tmp_path / "rl-core" / "rl_core" / "_sneaky.py").write_text("import rl_envs\n")
    result = _lint(tmp_path, roots)
    assert result.returncode != 0
    assert "rl_core imports no sibling package BROKEN" in result.stdout
