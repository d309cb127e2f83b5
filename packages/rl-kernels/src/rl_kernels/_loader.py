"""Loads the compiled kernels once, after checking they were built for the running torch."""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import sys
import warnings
from importlib.metadata import version
from pathlib import Path

import torch

from rl_core.ops import KernelLoadWarning
from rl_kernels import _elf

_HERE = Path(__file__).resolve().parent
_STATE: dict[str, object] = {"loaded": False, "error": None, "info": None}


_REINSTALL = "reinstall rl-kernels (uv sync --reinstall-package rl-kernels)"


def _build_info() -> dict:
    path = _HERE / "_build_info.json"
    if not path.is_file():
        raise RuntimeError(f"rl_kernels: no build record at {path}; reinstall rl-kernels.")
    try:
        info = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise RuntimeError(
            f"rl_kernels: the build record {path} is damaged ({exc}); {_REINSTALL}."
        ) from None
    if not isinstance(info, dict):
        raise RuntimeError(
            f"rl_kernels: the build record {path} is damaged (expected a JSON object, got "
            f"{type(info).__name__}); {_REINSTALL}."
        )
    return info


def _torch_cxx_library() -> Path | None:
    """torch's core C++ library (``libc10``), whose C++ runtime the kernels must share."""
    lib = Path(torch.__file__).resolve().parent / "lib"
    return next(iter(sorted(lib.glob("libc10.so*"))), None)


def check_binary(path: Path, info: dict) -> None:
    """Refuses a binary that ``dlopen`` would turn into a crash instead of an error.

    Checked from the file alone, before it is loaded: it is a whole ELF library (a
    truncated one raises SIGBUS when mapped), its size and SHA-256 match the build record
    when the record has them, and it shares torch's C++ runtime (see :mod:`rl_kernels._elf`).

    Raises:
        RuntimeError: naming the fault and how to fix it.
    """
    if not sys.platform.startswith("linux"):
        return  # the checks read ELF files; other platforms load as before
    try:
        elf = _elf.inspect(path)
    except _elf.ElfError as exc:
        raise RuntimeError(
            f"rl_kernels: the compiled library {path} is damaged ({exc}); {_REINSTALL}."
        ) from None
    size, digest = info.get("size"), info.get("sha256")
    if size is not None and size != elf.size:
        raise RuntimeError(
            f"rl_kernels: the compiled library {path} is damaged (expected {size} bytes as "
            f"built, got {elf.size}); {_REINSTALL}."
        )
    if digest is not None and digest != hashlib.sha256(path.read_bytes()).hexdigest():
        raise RuntimeError(
            f"rl_kernels: the compiled library {path} is damaged (its SHA-256 differs from "
            f"the build record's); {_REINSTALL}."
        )
    torch_library = _torch_cxx_library()
    if torch_library is None:
        return
    try:
        reason = _elf.foreign_cxx_runtime(path, torch_library)
    except _elf.ElfError:
        return  # torch's own library unreadable: nothing to compare with
    if reason is not None:
        raise RuntimeError(
            f"rl_kernels: {reason}. Rebuild it with the compiler torch's C++ runtime belongs "
            f"to, e.g. CXX=/usr/bin/g++ CC=/usr/bin/gcc uv sync --reinstall-package "
            f"rl-kernels."
        )


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
        binary = _binary()
        check_binary(binary, info)
        torch.ops.load_library(str(binary))
    except (OSError, RuntimeError, ValueError) as exc:
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
