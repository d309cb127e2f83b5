"""Data collectors that run rl-core policies in rl-core environments."""

from importlib.metadata import version as _version

__version__ = _version("rl-collectors")

__all__ = ["__version__"]
