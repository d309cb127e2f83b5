"""LLM post-training on the rl-core contract."""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-llm")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

__version__ = _version("rl-llm")

__all__ = ["__version__"]
