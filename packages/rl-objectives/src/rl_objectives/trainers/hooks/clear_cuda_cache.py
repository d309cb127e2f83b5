"""Releases the CUDA allocator's cached memory now and then: :class:`ClearCudaCache`."""

from __future__ import annotations

from typing import Any

import torch

from rl_objectives.trainers._utils import check_positive_int
from rl_objectives.trainers.hooks.common import TrainerHookBase


class ClearCudaCache(TrainerHookBase):
    """Calls ``torch.cuda.empty_cache()`` every ``interval`` collected batches.

    Registered at ``"pre_optim_steps"``. Without CUDA (or before CUDA is initialised) the call
    does nothing; :attr:`clears` counts the calls made.

    Args:
        interval: batches between two calls, a positive int.

    Raises:
        ValueError: ``interval`` is not a positive int.

    Examples:
        >>> from rl_objectives.trainers import ClearCudaCache
        >>> hook = ClearCudaCache(interval=3)
        >>> for _ in range(7):
        ...     hook()
        >>> print(hook.clears)
        2
    """

    def __init__(self, interval: int) -> None:
        self.interval = check_positive_int("ClearCudaCache", "interval", interval)
        self.count = 0
        self.clears = 0

    def __call__(self) -> None:
        """Counts one batch; empties the cache on every ``interval``-th."""
        self.count += 1
        if self.count % self.interval == 0:
            self.clears += 1
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.empty_cache()

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers at ``"pre_optim_steps"`` and its counter under ``name``."""
        trainer.register_op("pre_optim_steps", self)
        trainer.register_module(name or "clear_cuda_cache", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"count": batches seen, "clears": calls made}``."""
        return {"count": self.count, "clears": self.clears}
