"""LLM post-training on the rl-core contract.

Subpackages: :mod:`rl_llm.data` (``History`` and the policy outputs), :mod:`rl_llm.modules`
(``TransformersWrapper``), :mod:`rl_llm.envs` (chat envs and transforms),
:mod:`rl_llm.objectives` (GRPO, SFT), :mod:`rl_llm.collectors` (collector and weight
updaters). ``transformers`` is imported only by the functions that need it.
"""

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
