"""Checks every package of the stack runs on itself: version metadata and import isolation."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

SIBLINGS = ("rl_envs", "rl_buffers", "rl_collectors", "rl_objectives", "rl_llm", "rl_kernels")


def check_version_matches_pyproject(module_name: str, pyproject: Path) -> None:
    """``module.__version__`` and the installed metadata both equal the pyproject version.

    Raises:
        AssertionError: a version differs.
    """
    project = tomllib.loads(pyproject.read_text())["project"]
    declared = project["version"]
    module = importlib.import_module(module_name)
    installed = importlib.metadata.version(project["name"])
    if module.__version__ != declared or installed != declared:
        raise AssertionError(
            f"{module_name}: pyproject says {declared}, __version__ is {module.__version__}, "
            f"installed metadata is {installed}. Reinstall the package (uv sync)."
        )


@functools.cache
def modules_loaded_by(statement: str) -> frozenset[str]:
    """The names in ``sys.modules`` after ``statement`` runs in a fresh interpreter (this
    one's executable), submodules included.

    Each statement runs once per process: the import checks of a test session share the
    interpreter they start (each takes seconds, importing torch).

    Raises:
        subprocess.CalledProcessError: the statement failed.

    Examples:
        >>> "json" in modules_loaded_by("import json")
        True
    """
    code = f"{statement}\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return frozenset(out.stdout.split())


def check_import_loads_no_sibling(module_name: str) -> None:
    """Importing ``module_name`` in a fresh interpreter loads no other sibling package.

    Raises:
        AssertionError: a sibling was loaded.
    """
    loaded = {name.split(".")[0] for name in modules_loaded_by(f"import {module_name}")}
    others = sorted(loaded & (set(SIBLINGS) - {module_name}))
    if others:
        raise AssertionError(f"import {module_name} loaded sibling packages {others}.")


__all__ = [
    "SIBLINGS",
    "check_import_loads_no_sibling",
    "check_version_matches_pyproject",
    "modules_loaded_by",
]
