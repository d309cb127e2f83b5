"""Discovery of installed kernel packages (such as ``rl-kernels``) for the ``rl_core`` ops.

A kernel package registers faster kernels for the ``CPU``/``CUDA`` keys of the ``rl_core``
ops (see :mod:`rl_core.ops`). It announces itself with an entry point in the group
``"rl_core.ops"`` whose object is a module to import or a callable to call, e.g. in its
``pyproject.toml``::

    [project.entry-points."rl_core.ops"]
    rl_kernels = "rl_kernels"

:func:`load_kernel_packages` loads every such entry point once per process. The public op
wrappers of :mod:`rl_core.ops` call it at their first use (not at import, so that
``import rl_core`` stays light), so users never import a kernel package themselves; code
that calls ``torch.ops.rl_core.*`` directly, without any wrapper, can call it first.

A kernel package that fails to load (a binary built for another torch, missing symbols)
never breaks a program: it gives one :class:`KernelLoadWarning` naming the package and
the running torch version, and the reference kernels keep serving the ops.
"""

from __future__ import annotations

import warnings
from importlib.metadata import EntryPoint, entry_points

import torch

__all__ = ["ENTRY_POINT_GROUP", "KernelLoadWarning", "load_kernel_packages"]

ENTRY_POINT_GROUP = "rl_core.ops"


class KernelLoadWarning(RuntimeWarning):
    """A kernel package for the ``rl_core`` ops could not load; the reference kernels run.

    Examples:
        >>> from rl_core.ops import KernelLoadWarning
        >>> issubclass(KernelLoadWarning, RuntimeWarning)
        True
    """


# None until the first load; then the names of the entry points that loaded.
_loaded: tuple[str, ...] | None = None


def _describe(entry: EntryPoint) -> str:
    dist = entry.dist
    if dist is None:
        return f"{entry.name} ({entry.value})"
    return f"{entry.name} ({dist.name} {dist.version})"


def load_kernel_packages() -> tuple[str, ...]:
    """Loads the kernel packages announced in the ``"rl_core.ops"`` entry-point group, once.

    Each entry point is loaded (its module imported); when the loaded object is callable it
    is called with no argument. Later calls return the first call's result without loading
    anything again.

    Returns:
        The names of the entry points that loaded, in discovery order.

    Warns:
        KernelLoadWarning: once per entry point that raised while loading, naming it, its
            distribution and the running torch version; the ops keep their reference kernels.

    Examples:
        >>> from rl_core.ops import load_kernel_packages
        >>> isinstance(load_kernel_packages(), tuple)
        True
    """
    global _loaded
    if _loaded is not None:
        return _loaded
    _loaded = ()  # a package that calls back into rl_core.ops while loading finds no work
    names = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = entry.load()
            if callable(target):
                target()
        except Exception as exc:  # a broken kernel package must never break the ops
            warnings.warn(
                f"rl_core.ops: kernel package {_describe(entry)} failed to load with torch "
                f"{torch.__version__}: {type(exc).__name__}: {exc} The reference kernels are "
                f"used instead.",
                KernelLoadWarning,
                stacklevel=2,
            )
        else:
            names.append(entry.name)
    _loaded = tuple(names)
    return _loaded


def ensure_kernel_packages() -> None:
    """Loads the kernel packages before the first op call (cheap afterwards); not traced."""
    if _loaded is None and not torch.compiler.is_compiling():
        load_kernel_packages()
