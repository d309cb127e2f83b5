import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import rl_collectors

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_version_is_the_pyproject_version():
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    assert rl_collectors.__version__ == declared
    assert importlib.metadata.version("rl-collectors") == declared


def test_import_loads_no_sibling_package():
    siblings = ["rl_envs", "rl_buffers", "rl_collectors", "rl_objectives", "rl_llm", "rl_kernels"]
    code = "import sys, rl_collectors; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout.split()
    )
    assert not loaded & (set(siblings) - {"rl_collectors"})
