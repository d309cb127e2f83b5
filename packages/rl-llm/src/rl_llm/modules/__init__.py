"""LLM policies: transformers and vLLM models as TensorDict modules with one contract."""

from rl_llm.modules.base import LLMWrapperBase
from rl_llm.modules.distributions import LLMMaskedCategorical
from rl_llm.modules.hf_reward_model import HFRewardModelWrapper
from rl_llm.modules.lm_head_actor_value import LMHeadActorValueOperator
from rl_llm.modules.remote_transformers_wrapper import RemoteTransformersWrapper
from rl_llm.modules.reward_model import GPT2RewardModel
from rl_llm.modules.transformers_wrapper import TransformersWrapper
from rl_llm.modules.vllm_wrapper import vLLMWrapper

__all__ = [
    "LLMWrapperBase",
    "TransformersWrapper",
    "vLLMWrapper",
    "GPT2RewardModel",
    "LLMMaskedCategorical",
    "LMHeadActorValueOperator",
    "HFRewardModelWrapper",
    "RemoteTransformersWrapper",
]
