"""Compiled CPU and CUDA kernels for the ops declared in ``rl_core.ops``.

Importing this package loads its binary, which registers kernels for the ``CPU`` key (and
the ``CUDA`` key when built with a CUDA toolkit) of the ``rl_core`` ops: GAE, TD(lambda),
V-trace, the sum/min segment-tree updates and prefix-sum search, the fused
prioritized-replay ops ``sum_min_tree_update_``, ``sum_tree_sample`` and
``sum_min_tree_priority_update_``, and (CPU) ``gather_rows``. Nothing else changes:
callers keep calling :mod:`rl_core.ops` (or ``torch.ops.rl_core``), and the dispatcher picks
these kernels for tensors on those devices. ``rl_core.ops`` imports this package by itself
at the first op call (entry point group ``rl_core.ops``), so users need not import it.

A binary built against another torch than the running one is not loaded: the import gives
one :class:`rl_core.ops.KernelLoadWarning` naming both torch versions, and the reference
kernels keep serving every op. :func:`loaded` says whether the kernels are registered.

Examples:
    >>> import rl_kernels
    >>> rl_kernels.loaded()
    True
    >>> "cpu" in rl_kernels.devices()
    True
"""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-kernels")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

from rl_kernels._loader import built_torch_version, devices, load_error, loaded
from rl_kernels._loader import load as _load

__version__ = _version("rl-kernels")

__all__ = ["__version__", "built_torch_version", "devices", "load_error", "loaded"]

# The purpose of this package: importing it registers the kernels (or warns once).
_load()
