"""LLM policies: transformers (and, when installed, vLLM) models as TensorDict modules."""

from rl_llm.modules.transformers_wrapper import TransformersWrapper

__all__ = ["TransformersWrapper"]
