"""Replay buffers that store and sample rl-core TensorDicts."""

from importlib.metadata import version as _version

__version__ = _version("rl-buffers")

__all__ = ["__version__"]
