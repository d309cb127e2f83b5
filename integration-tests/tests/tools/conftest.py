"""Loads the repository's tools/ scripts as modules (they are scripts, not an installed package)."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


def load_tool(name: str) -> ModuleType:
    """Imports ``tools/<name>.py`` once under the module name ``tools_<name>``."""
    module_name = f"tools_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, ROOT / "tools" / f"{name}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


@pytest.fixture(scope="session")
def api_check() -> ModuleType:
    return load_tool("api_check")


@pytest.fixture(scope="session")
def release_tool() -> ModuleType:
    return load_tool("release")


@pytest.fixture(scope="session")
def check_wheels() -> ModuleType:
    return load_tool("check_wheels")


@pytest.fixture(scope="session")
def migrate() -> ModuleType:
    return load_tool("migrate_torchrl")


@pytest.fixture(scope="session")
def lowest_env() -> ModuleType:
    return load_tool("lowest_env")


@pytest.fixture
def demo_workspace(tmp_path: Path) -> Path:
    """A one-package workspace (rl-demo 0.1.0) with a public name re-exported from a private module."""
    pkg = tmp_path / "packages" / "rl-demo"
    src = pkg / "src" / "rl_demo"
    src.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text('[tool.uv.workspace]\nmembers = ["packages/*"]\n')
    (pkg / "pyproject.toml").write_text(
        '[project]\nname = "rl-demo"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n'
        "dependencies = []\n\n"
        '[build-system]\nrequires = ["uv_build>=0.9,<0.14"]\nbuild-backend = "uv_build"\n'
    )
    (pkg / "README.md").write_text("# rl-demo\n")
    (pkg / "CHANGELOG.md").write_text(
        "# Changelog: rl-demo\n\n## Unreleased\n\n### Added\n- `scale` and `Buffer`.\n"
    )
    (src / "__init__.py").write_text(
        '"""Demo."""\n\nfrom importlib.metadata import version\n\nfrom rl_demo._impl import Buffer, scale\n\n'
        '__version__ = version("rl-demo")\n__all__ = ["Buffer", "scale"]\n'
    )
    (src / "_impl.py").write_text(
        "class Buffer:\n"
        "    def __init__(self, size: int, *, device: str = 'cpu') -> None:\n"
        "        self.size = size\n\n"
        "    def sample(self, batch_size: int, replace: bool = True) -> list:\n"
        "        return []\n\n\n"
        "def scale(x: float, factor: float = 2.0) -> float:\n"
        "    return x * factor\n"
    )
    return tmp_path
