"""TrajCounter: a unique id for each trajectory, shared by batched envs and workers."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform, Unbounded
from rl_core.keys import RESET, NestedKey


class TrajCounter(Transform):
    """Gives each new trajectory (each reset sub-env) the next id of a shared counter.

    The counter is a shared-memory tensor that :meth:`clone` keeps: the clones of one
    TrajCounter in forked ``ParallelEnv`` workers (a create function returning an env with
    ``counter.clone()``) draw from the same counter. Pass a ``lock`` shared by the workers so that two resets at the same moment
    never draw the same id.

    Args:
        out_key: where the id goes. Defaults to ``"traj_count"``.
        lock: an optional lock held while ids are drawn.

    Examples:
        >>> from rl_core import TransformedEnv
        >>> from rl_core.testing import CountingEnv
        >>> env = TransformedEnv(CountingEnv(batch_size=[3]), TrajCounter())
        >>> env.reset()["traj_count"].squeeze(-1).tolist()
        [0, 1, 2]
    """

    def __init__(self, out_key: NestedKey = "traj_count", *, lock: Any = None) -> None:
        super().__init__()
        self.out_keys = [out_key]
        self.counter = torch.zeros((), dtype=torch.int64).share_memory_()
        self.__dict__["lock"] = lock

    def clone(self) -> TrajCounter:
        """A copy that belongs to no env and draws from the same shared counter (and lock)."""
        counter, lock = self.counter, self.lock
        self.__dict__["lock"] = None
        try:
            out = super().clone()
        finally:
            self.__dict__["lock"] = lock
        out.counter = counter
        out.__dict__["lock"] = lock
        return out

    def _draw(self, mask: torch.Tensor) -> torch.Tensor:
        counter = self.counter
        if counter.device != mask.device:
            offsets = mask.long().cumsum(0).to(counter.device)
        else:
            offsets = mask.long().cumsum(0)
        ids = counter + offsets - 1
        counter.add_(offsets[-1] if offsets.numel() else 0)
        return ids.to(mask.device)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        batch = tensordict_reset.batch_size
        mask = None if tensordict is None else tensordict.get(RESET, None)
        if mask is None:
            mask = torch.ones((*batch, 1), dtype=torch.bool, device=tensordict_reset.device)
        flat = mask.reshape(-1)
        if self.lock is None:
            ids = self._draw(flat)
        else:
            with self.lock:
                ids = self._draw(flat)
        tensordict_reset.set(self.out_keys[0], ids.reshape(*batch, 1))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        ids = tensordict.get(self.out_keys[0], None)
        if ids is None:
            raise KeyError(
                f"TrajCounter: expected {self.out_keys[0]!r} in the TensorDict given to step; "
                f"reset writes it. Reset the env first."
            )
        next_tensordict.set(self.out_keys[0], ids)
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        observation_spec[self.out_keys[0]] = Unbounded(
            shape=(*observation_spec.shape, 1), device=observation_spec.device, dtype=torch.int64
        )
        return observation_spec


__all__ = ["TrajCounter"]
