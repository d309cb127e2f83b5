"""Data collectors that run rl-core policies in rl-core environments."""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-collectors")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

__version__ = _version("rl-collectors")

__all__ = ["__version__"]
