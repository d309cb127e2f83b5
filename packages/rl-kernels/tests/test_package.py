import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import rl_kernels

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_version_is_the_pyproject_version():
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    assert rl_kernels.__version__ == declared
    assert importlib.metadata.version("rl-kernels") == declared


def test_import_loads_no_sibling_package():
    siblings = ["rl_envs", "rl_buffers", "rl_collectors", "rl_objectives", "rl_llm", "rl_kernels"]
    code = "import sys, rl_kernels; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout.split()
    )
    assert not loaded & (set(siblings) - {"rl_kernels"})
