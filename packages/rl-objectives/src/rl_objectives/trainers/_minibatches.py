"""Cuts each epoch's batch into shuffled mini-batches (the on-policy trainers' sampler)."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_objectives.trainers._utils import valid_mask


class EpochMinibatches:
    """At ``"pre_epoch"`` flattens the batch's valid steps and draws a permutation; at
    ``"process_optim_batch"`` hands out its next ``batch_size`` steps (``None``: the whole
    batch each time). The permutation comes from torch's global generator."""

    def __init__(self, batch_size: int | None) -> None:
        self.batch_size = batch_size
        self._flat: TensorDictBase | None = None
        self._order: torch.Tensor | None = None
        self._next = 0

    def steps(self, batch: TensorDictBase) -> int:
        """Mini-batches per epoch: ``ceil(valid steps / batch_size)`` (1 without a size)."""
        if self.batch_size is None:
            return 1
        mask = valid_mask(batch)
        frames = batch.numel() if mask is None else int(mask.sum())
        return -(-frames // self.batch_size)

    def start_epoch(self, batch: TensorDictBase) -> TensorDictBase:
        mask = valid_mask(batch)
        self._flat = batch.reshape(-1) if mask is None else batch[mask]
        self._order = torch.randperm(self._flat.numel())
        self._next = 0
        return batch

    def next(self, batch: Any) -> TensorDictBase:
        if self._flat is None or self._order is None:
            raise RuntimeError("OnPolicyTrainer: a mini-batch was asked for before an epoch began.")
        if self.batch_size is None:
            return self._flat
        index = self._order[self._next : self._next + self.batch_size]
        self._next += self.batch_size
        return self._flat[index]
