"""LLM post-training on the rl-core contract."""

from importlib.metadata import version as _version

__version__ = _version("rl-llm")

__all__ = ["__version__"]
