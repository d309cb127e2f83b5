"""Standardises rewards with decayed running statistics: :class:`RewardNormalizer`."""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core.keys import NEXT, REWARD, NestedKey
from rl_objectives.trainers._utils import valid_mask
from rl_objectives.trainers.hooks.common import TrainerHookBase


class RewardNormalizer(TrainerHookBase):
    """Tracks decayed reward statistics on collected batches and standardises training rewards.

    At ``"batch_process"`` the valid rewards ``r_1..r_n`` of a batch update three decayed
    sums, starting from zero::

        S   <- decay * S   + sum(r_i)
        Q   <- decay * Q   + sum(r_i ** 2)
        N   <- decay * N   + n
        mean = S / N,  std = max(sqrt(max(Q / N - mean ** 2, 0)), eps)

    At ``"process_optim_batch"`` the sub-batch's rewards become
    ``scale * (r - mean) / std`` (in a shallow copy: the stored batch keeps its rewards).

    Args:
        decay: the weight of the past, in ``[0, 1]``. Defaults to 0.999.
        scale: multiplies the standardised reward. Defaults to 1.0.
        eps: the smallest standard deviation divided by. Defaults to 1e-4.

    Keyword Args:
        reward_key: where the reward is. Defaults to ``("next", "reward")``.

    Raises:
        ValueError: ``decay`` outside ``[0, 1]``, ``eps`` or ``scale`` not positive.
        RuntimeError: (when normalising) no batch has been seen yet.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.trainers import RewardNormalizer
        >>> hook = RewardNormalizer(decay=1.0)
        >>> batch = TensorDict({("next", "reward"): torch.tensor([[1.0], [3.0]])}, batch_size=[2])
        >>> hook.update_reward_stats(batch)
        >>> print(hook.normalize_reward(batch)["next", "reward"].flatten().tolist())
        [-1.0, 1.0]
    """

    def __init__(
        self,
        decay: float = 0.999,
        scale: float = 1.0,
        eps: float = 1e-4,
        *,
        reward_key: NestedKey = (NEXT, REWARD),
    ) -> None:
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"RewardNormalizer: decay must be in [0, 1], got {decay!r}.")
        if not (eps > 0 and math.isfinite(eps)):
            raise ValueError(f"RewardNormalizer: eps must be > 0, got {eps!r}.")
        if not (scale > 0 and math.isfinite(scale)):
            raise ValueError(f"RewardNormalizer: scale must be > 0, got {scale!r}.")
        self.decay = float(decay)
        self.scale = float(scale)
        self.eps = float(eps)
        self.reward_key = reward_key
        self.sum = 0.0
        self.sum_sq = 0.0
        self.count = 0.0

    def _reward(self, batch: TensorDictBase) -> torch.Tensor:
        reward = batch.get(self.reward_key, None)
        if reward is None:
            raise KeyError(
                f"RewardNormalizer: the batch has no reward at {self.reward_key!r}; set "
                f"reward_key= to where the reward is."
            )
        return reward

    @torch.no_grad()
    def update_reward_stats(self, batch: TensorDictBase) -> None:
        """Adds the batch's valid rewards to the decayed sums."""
        reward = self._reward(batch)
        mask = valid_mask(batch)
        if mask is not None:
            reward = reward[mask]
        reward = reward.double()
        self.sum = self.decay * self.sum + reward.sum().item()
        self.sum_sq = self.decay * self.sum_sq + reward.pow(2).sum().item()
        self.count = self.decay * self.count + reward.numel()

    @property
    def mean(self) -> float:
        """The decayed mean reward."""
        self._check_seen()
        return self.sum / self.count

    @property
    def std(self) -> float:
        """The decayed standard deviation, at least ``eps``."""
        mean = self.mean
        return max(math.sqrt(max(self.sum_sq / self.count - mean * mean, 0.0)), self.eps)

    def _check_seen(self) -> None:
        if self.count <= 0:
            raise RuntimeError(
                "RewardNormalizer: no reward seen yet; register the hook (hook.register("
                "trainer)) so update_reward_stats runs on each batch before normalising."
            )

    def normalize_reward(self, batch: TensorDictBase) -> TensorDictBase:
        """Returns a shallow copy of ``batch`` with standardised rewards."""
        reward = self._reward(batch)
        normalized = (reward - self.mean) / self.std * self.scale
        out = batch.copy()
        out.set(self.reward_key, normalized.to(reward.dtype))
        return out

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the update at ``"batch_process"``, the normalisation at
        ``"process_optim_batch"`` and the sums under ``name``."""
        trainer.register_op("batch_process", self.update_reward_stats)
        trainer.register_op("process_optim_batch", self.normalize_reward)
        trainer.register_module(name or "reward_normalizer", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"sum": S, "sum_sq": Q, "count": N}``."""
        return {"sum": self.sum, "sum_sq": self.sum_sq, "count": self.count}
