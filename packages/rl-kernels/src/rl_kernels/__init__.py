"""Compiled implementations of the ops declared in ``rl_core.ops``."""

from importlib.metadata import version as _version

__version__ = _version("rl-kernels")

__all__ = ["__version__"]
