"""The numpy-row plan of rl-envs' ``RewardSum``.

``rl_envs.transforms._plans`` registers it with rl-core's row lane for its transform type,
so this module imports no transform. The plan computes what the transform's ``_step`` /
``_reset`` give on numpy rows, for the settings it supports (it returns ``None`` when built for
others, and ``False`` per call where an input is not a row it can read); the transforms hold
only the reference code.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tensordict import TensorDictBase

from rl_core._accel.seam import NUMPY_DTYPES, RowLane, on_cpu


class _SumPlan:
    """``RewardSum``'s step and reset on numpy rows, for one root-level reward.

    The step adds the reward row to the running sum's row (rows of one shape and dtype)
    into a fresh row: for one float element with Python floats (a float32 sum rounded once
    from a float64 sum is the float32 sum, double rounding being innocuous for one addition
    since 53 >= 2 * 24 + 2), else with ``np.add``; torch.add's bits either way. The reset
    writes a zero row. Keys are read when the plan is built: like the env's specs, it is
    rebuilt when the transforms change through the env.
    """

    def __init__(self, owner: Any, lane: RowLane) -> None:
        self.owner, self.numpy, self.lane = owner, lane.numpy, lane
        self.in_key, self.out_key = owner.in_keys[0], owner.out_keys[0]
        # The sums' rows: (shape, dtype, take, one float element) of the last step's kind.
        self.kind: tuple = ((), None, None, False)
        # (spec, take) of the reset's zero rows for the sum's spec (``take`` None where the
        # spec has no numpy rows), read again when the spec is replaced.
        self.zeros: tuple = (None, None)
        # (tensor, numpy row) of the sum this plan wrote last (step or reset).
        self.last: tuple = (None, None)

    def step(self, root: dict, nxt: dict, next_tensordict: TensorDictBase) -> bool:
        numpy, value, last = self.numpy, root.get(self.out_key), self.last
        # The sum this plan wrote last (the common case), else the lane's lookup.
        total = last[1] if value is last[0] else numpy(value)
        if total is None:
            return False
        reward = numpy(nxt.get(self.in_key))
        if reward is None:
            return False
        shape, dtype = total.shape, total.dtype
        if reward.dtype != dtype or reward.shape != shape:
            return False
        kind = self.kind
        if kind[1] != dtype or kind[0] != shape:
            one_float = shape == (1,) and dtype.kind == "f"
            kind = self.kind = (shape, dtype, self.lane.rows(shape, dtype), one_float)
        out, row = self.last = kind[2]()
        if kind[3]:
            row[0] = float(total[0]) + float(reward[0])
        else:
            np.add(total, reward, row)
        nxt[self.out_key] = out
        return True

    def reset(self, fresh: dict, tensordict_reset: TensorDictBase) -> bool:
        spec = self.owner._reward_specs.get(self.out_key)
        if spec is None:
            return False  # _reset reads the spec first
        zeros = self.zeros
        if zeros[0] is not spec:
            # The zero rows of this spec: its shape and numpy dtype, on the CPU only.
            dtype = NUMPY_DTYPES.get(spec.dtype)
            take = None
            if dtype is not None and on_cpu(spec.device):
                take = self.lane.rows(tuple(spec.shape), dtype)
            zeros = self.zeros = (spec, take)
        if zeros[1] is None:
            return False
        self.last = zeros[1]()
        fresh[self.out_key] = self.last[0]
        return True


def sum_lane_plan(owner: Any, lane: RowLane) -> _SumPlan | None:
    """One root-level reward and sum."""
    if len(owner.in_keys) != 1 or type(owner.in_keys[0]) is not str:
        return None
    if type(owner.out_keys[0]) is not str:
        return None
    return _SumPlan(owner, lane)


__all__ = ["sum_lane_plan"]
