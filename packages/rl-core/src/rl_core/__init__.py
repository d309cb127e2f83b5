"""The TensorDict contract shared by every package of the stack."""

from importlib.metadata import version as _version

__version__ = _version("rl-core")

__all__ = ["__version__"]
