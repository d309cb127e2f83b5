"""The numpy-row plans of rl-core's ``StepCounter`` and ``InitTracker``;
``rl_core.transforms._plans`` registers each with the lane (``lane``) for its transform type, so
this module imports no transform (rl-envs keeps the plans of its own transforms, ``RewardSum``
among them).

Each plan computes what its transform's ``_step`` / ``_reset`` give on numpy rows, for the
settings it supports (it returns ``None`` when built for others, and ``False`` per call where
an input is not a row it can read); the transforms themselves hold only the reference code.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tensordict import TensorDictBase

from rl_core._accel.fast_td import batch_size_of, device_of
from rl_core._accel.lane import RowLane
from rl_core._accel.rows import on_cpu

_INT64 = np.dtype(np.int64)
_INT64_MAX = int(np.iinfo(np.int64).max)
_BOOL = np.dtype(np.bool_)


class _CountPlan:
    """``StepCounter``'s step and reset on numpy rows, for a root-level count that truncates
    nothing: the next count goes into a fresh row (a Python int for one element, else
    ``np.add``), the reset writes a zero row."""

    def __init__(self, owner: Any, lane: RowLane) -> None:
        self.owner, self.numpy, self.lane = owner, lane.numpy, lane
        self.key = owner.step_count_key
        self.one = lane.rows((1,), _INT64)  # the rows of one count
        self.last: tuple = (None, None)  # (tensor, numpy row) of the count written last

    def step(self, root: dict, nxt: dict, next_tensordict: TensorDictBase) -> bool:
        value, last = root.get(self.key), self.last
        # The count this plan wrote last (the common case), else the lane's lookup.
        count = last[1] if value is last[0] else self.numpy(value)
        if count is None or count.dtype != _INT64 or self.owner.max_steps is not None:
            return False
        if count.shape == (1,):
            value = int(count[0]) + 1
            if value > _INT64_MAX:
                return False  # torch wraps around; leave that to it
            out, row = self.last = self.one()
            row[0] = value
        else:
            out, row = self.last = self.lane.rows(count.shape, _INT64)()
            np.add(count, 1, row)
        nxt[self.key] = out
        return True

    def reset(self, fresh: dict, tensordict_reset: TensorDictBase) -> bool:
        if self.owner.max_steps is not None or not on_cpu(device_of(tensordict_reset)):
            return False
        batch = batch_size_of(tensordict_reset)
        take = self.one if not batch else self.lane.rows((*batch, 1), _INT64)
        self.last = take()
        fresh[self.key] = self.last[0]
        return True


def count_lane_plan(owner: Any, lane: RowLane) -> _CountPlan | None:
    """A root-level count that truncates nothing."""
    if owner.max_steps is not None or type(owner.step_count_key) is not str:
        return None
    return _CountPlan(owner, lane)


class _InitPlan:
    """``InitTracker``'s flags on numpy rows, for a root-level key: a fresh row of False after
    a step and of True after a reset, shaped ``[*batch, 1]``, what ``torch.full`` gives where
    the TensorDict's device is the CPU (or none, with the CPU as torch's default device);
    else ``False``. The key is read when the plan is built: like the env's specs, it is
    rebuilt when the transforms change through the env."""

    def __init__(self, owner: Any, lane: RowLane) -> None:
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


def init_lane_plan(owner: Any, lane: RowLane) -> _InitPlan | None:
    """A root-level key."""
    return _InitPlan(owner, lane) if type(owner.init_key) is str else None


__all__ = ["count_lane_plan", "init_lane_plan"]
