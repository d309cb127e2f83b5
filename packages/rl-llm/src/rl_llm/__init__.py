"""LLM post-training on the rl-core contract.

Subpackages: :mod:`rl_llm.data` (``History`` and the policy outputs), :mod:`rl_llm.modules`
(``TransformersWrapper``), :mod:`rl_llm.envs` (chat envs and transforms),
:mod:`rl_llm.objectives` (GRPO, SFT), :mod:`rl_llm.collectors` (collector and weight
updaters). ``transformers`` is imported only by the functions that need it.
"""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-llm")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

from rl_llm import keys
from rl_llm.data import ChatHistory, History, LogProbs, Masks, Text, Tokens
from rl_llm.modules import TransformersWrapper

__version__ = _version("rl-llm")

__all__ = [
    "__version__",
    "keys",
    "History",
    "ChatHistory",
    "Text",
    "Tokens",
    "Masks",
    "LogProbs",
    "TransformersWrapper",
]
