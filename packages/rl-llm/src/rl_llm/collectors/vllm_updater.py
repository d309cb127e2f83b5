"""vLLMUpdater: loads trained weights into an in-process vLLM engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch


class vLLMUpdater:
    """Pushes a state dict (or a module's) into a ``vllm.LLM`` through its weight-reload API.

    It calls ``llm.collective_rpc("reload_weights", kwargs={"weights_iterator": [...]})`` (the
    engine repacks the weights for its kernels) and then clears the prefix cache so no KV entry
    computed with the old weights is reused. The engine must run in-process
    (``VLLM_ENABLE_V1_MULTIPROCESSING=0``): in multi-process mode the tensors would be sent as
    lists, which is not tested here.

    Args:
        llm: the ``vllm.LLM`` engine.
    """

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    @torch.no_grad()
    def update(self, weights: Mapping[str, torch.Tensor] | torch.nn.Module) -> None:
        """Reloads the engine's weights from ``weights`` (names as in the HF checkpoint)."""
        source = weights.state_dict() if isinstance(weights, torch.nn.Module) else weights
        items = [(name, value.detach().cpu().contiguous()) for name, value in source.items()]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": items})
        self.llm.reset_prefix_cache()
