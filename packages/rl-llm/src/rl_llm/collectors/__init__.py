"""Collection of dialogs with LLM policies, and weight sync into inference engines."""

from rl_llm.collectors.llm_collector import LLMCollector
from rl_llm.collectors.ray_llm_collector import RayLLMCollector
from rl_llm.collectors.vllm_updater import vLLMUpdater
from rl_llm.collectors.weight_updater import TransformersWeightUpdater

__all__ = ["LLMCollector", "TransformersWeightUpdater", "vLLMUpdater", "RayLLMCollector"]
