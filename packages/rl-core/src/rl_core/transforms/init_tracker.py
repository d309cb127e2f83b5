"""InitTracker: marks the first step of every episode."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from rl_core.fast_td import batch_size_of, device_of
from rl_core.keys import IS_INIT, NestedKey
from rl_core.specs import Categorical, Composite
from rl_core.transforms._lane import RowLane
from rl_core.transforms._rows import on_cpu
from rl_core.transforms.transform import Transform

_BOOL = np.dtype(np.bool_)


class _InitPlan:
    """``InitTracker``'s flags on numpy rows, for a root-level key: a fresh row of False after
    a step and of True after a reset, shaped ``[*batch, 1]``, what ``torch.full`` gives where
    the TensorDict's device is the CPU (or none, with the CPU as torch's default device);
    else ``False``. The key is read when the plan is built: like the env's specs, it is
    rebuilt when the transforms change through the env."""

    def __init__(self, owner: InitTracker, lane: RowLane) -> None:
        self.lane, self.key = lane, owner.init_key
        self.takes: dict[tuple[int, ...], Any] = {}

    def _write(self, found: dict, td: TensorDictBase, value: bool) -> bool:
        if not on_cpu(device_of(td)):
            return False
        shape = (*batch_size_of(td), 1)
        take = self.takes.get(shape)
        if take is None:
            take = self.takes[shape] = self.lane.rows(shape, _BOOL)
        out, row = take()  # zeros: False
        if value:
            row[...] = True
        found[self.key] = out
        return True

    def step(self, root: dict, nxt: dict, next_tensordict: TensorDictBase) -> bool:
        return self._write(nxt, next_tensordict, False)

    def reset(self, fresh: dict, tensordict_reset: TensorDictBase) -> bool:
        return self._write(fresh, tensordict_reset, True)


class InitTracker(Transform):
    """Writes ``is_init``: True right after a reset, False after every step.

    Recurrent modules and exploration noise read it to restart their state per sub-env.

    Args:
        init_key: where the flag goes. Defaults to ``"is_init"``.
    """

    fusable = True  # maps step and reset outputs only

    def __init__(self, init_key: NestedKey = IS_INIT) -> None:
        super().__init__()
        self.init_key = init_key

    def _flag(self, td: TensorDictBase, value: bool) -> torch.Tensor:
        shape = (*td.batch_size, 1)
        return torch.full(shape, value, dtype=torch.bool, device=td.device)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset.set(self.init_key, self._flag(tensordict_reset, True))

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict.set(self.init_key, self._flag(next_tensordict, False))

    def _lane_plan(self, lane: RowLane) -> _InitPlan | None:
        """The numpy-row plan of this transform (``rl_core.transforms._lane``), for a
        root-level key."""
        return _InitPlan(self, lane) if type(self.init_key) is str else None

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        observation_spec[self.init_key] = Categorical(
            2,
            shape=(*observation_spec.shape, 1),
            device=observation_spec.device,
            dtype=torch.bool,
        )
        return observation_spec


__all__ = ["InitTracker"]
