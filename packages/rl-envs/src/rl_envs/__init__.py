"""Environments that speak the rl-core TensorDict contract."""

from importlib.metadata import version as _version

__version__ = _version("rl-envs")

__all__ = ["__version__"]
