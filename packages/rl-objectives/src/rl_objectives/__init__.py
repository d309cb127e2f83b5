"""Losses and value estimators built on the rl-core LossModule base."""

from importlib.metadata import version as _version

__version__ = _version("rl-objectives")

__all__ = ["__version__"]
