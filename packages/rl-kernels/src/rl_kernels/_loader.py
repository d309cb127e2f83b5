"""Loads the compiled kernels once, after checking they were built for the running torch."""

from __future__ import annotations

import importlib.machinery
import json
import warnings
from importlib.metadata import version
from pathlib import Path

import torch

from rl_core.ops import KernelLoadWarning

_HERE = Path(__file__).resolve().parent
_STATE: dict[str, object] = {"loaded": False, "error": None, "info": None}


def _build_info() -> dict:
    path = _HERE / "_build_info.json"
    if not path.is_file():
        raise RuntimeError(f"rl_kernels: no build record at {path}; reinstall rl-kernels.")
    return json.loads(path.read_text())


def _binary() -> Path:
    # The extension built for this interpreter (a tree may hold builds for several).
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = _HERE / f"_C{suffix}"
        if path.is_file():
            return path
    raise RuntimeError(
        f"rl_kernels: no compiled library _C{importlib.machinery.EXTENSION_SUFFIXES[0]} in "
        f"{_HERE}; reinstall rl-kernels with a C++ compiler available."
    )


def load() -> bool:
    """Loads and registers the kernels once; warns and returns False when they cannot load."""
    if _STATE["loaded"] or _STATE["error"] is not None:
        return bool(_STATE["loaded"])
    try:
        info = _build_info()
        _STATE["info"] = info
        built = info.get("torch")
        if built != torch.__version__:
            raise RuntimeError(
                f"rl_kernels was built against torch {built} but torch {torch.__version__} "
                f"is running; rebuild it (uv sync --reinstall-package rl-kernels)."
            )
        torch.ops.load_library(str(_binary()))
    except (OSError, RuntimeError) as exc:
        _STATE["error"] = str(exc)
        warnings.warn(
            f"rl_kernels {version('rl-kernels')}: compiled kernels not loaded (running torch "
            f"{torch.__version__}): {exc} The pure-torch reference kernels of rl_core.ops "
            f"are used instead.",
            KernelLoadWarning,
            stacklevel=2,
        )
        return False
    _STATE["loaded"] = True
    return True


def loaded() -> bool:
    """Whether the compiled kernels are registered in this process.

    Returns:
        True when ``import rl_kernels`` loaded its binary.

    Examples:
        >>> import rl_kernels
        >>> isinstance(rl_kernels.loaded(), bool)
        True
    """
    return bool(_STATE["loaded"])


def load_error() -> str | None:
    """Why the kernels were not loaded, or None when they were (or were not tried yet).

    Returns:
        The error message of the failed load, if any.

    Examples:
        >>> import rl_kernels
        >>> rl_kernels.load_error() is None
        True
    """
    return _STATE["error"]  # type: ignore[return-value]


def built_torch_version() -> str | None:
    """The torch version the binary was built against (from its build record).

    Returns:
        A version string such as ``"2.13.0"``, or None when there is no build record.

    Examples:
        >>> import torch, rl_kernels
        >>> rl_kernels.built_torch_version() == torch.__version__
        True
    """
    try:
        return _build_info().get("torch")
    except (OSError, RuntimeError, ValueError):
        return None


def devices() -> tuple[str, ...]:
    """The device types the loaded kernels serve: ``("cpu",)`` or ``("cpu", "cuda")``.

    Returns:
        Empty when the kernels are not loaded.

    Examples:
        >>> import rl_kernels
        >>> rl_kernels.devices()[:1]
        ('cpu',)
    """
    if not _STATE["loaded"]:
        return ()
    info = _STATE["info"] or {}
    return ("cpu", "cuda") if info.get("cuda") else ("cpu",)
