"""Compiled implementations of the ops declared in ``rl_core.ops``."""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-kernels")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

__version__ = _version("rl-kernels")

__all__ = ["__version__"]
