"""RewardSum: the return of the episode so far."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from tensordict import TensorDictBase

from rl_core.fast_td import entries, get_leaf, is_plain, set_leaf
from rl_core.keys import EPISODE_REWARD, REWARD, NestedKey
from rl_core.specs import Composite, TensorSpec, Unbounded
from rl_core.transforms._lane import RowLane
from rl_core.transforms._rows import NUMPY_DTYPES, on_cpu, zeros
from rl_core.transforms.transform import Transform


def _name(key: NestedKey) -> str:
    return key if isinstance(key, str) else key[-1]


class _SumPlan:
    """``RewardSum``'s step and reset on numpy rows, for one root-level reward.

    The step adds the reward row to the running sum's row (rows of one shape and dtype)
    into a fresh row: for one float element with Python floats (a float32 sum rounded once
    from a float64 sum is the float32 sum, double rounding being innocuous for one addition
    since 53 >= 2 * 24 + 2), else with ``np.add``; torch.add's bits either way. The reset
    writes a zero row. Keys are read when the plan is built: like the env's specs, it is
    rebuilt when the transforms change through the env.
    """

    def __init__(self, owner: RewardSum, lane: RowLane) -> None:
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


class RewardSum(Transform):
    """Accumulates rewards over the episode: ``episode_reward`` is 0 after a reset.

    Args:
        in_keys: the rewards to sum. Defaults to ``["reward"]``.
        out_keys: where the sums go. Defaults to ``"episode_reward"`` for ``"reward"`` and
            ``"episode_<name>"`` for others, beside the reward (same group).

    Raises:
        KeyError: a step comes without the running sum (the env was not reset through the
            transform).
    """

    fusable = True  # maps step and reset outputs only

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=REWARD if in_keys is None else in_keys, out_keys=out_keys)
        if out_keys is None:
            self.out_keys = [self._default_out_key(key) for key in self.in_keys]
        self.__dict__["_reward_specs"] = {}

    @staticmethod
    def _default_out_key(key: NestedKey) -> NestedKey:
        name = EPISODE_REWARD if _name(key) == REWARD else f"episode_{_name(key)}"
        return name if isinstance(key, str) else (*key[:-1], name)

    def _sum_spec(self, reward: TensorSpec) -> Unbounded:
        return Unbounded(shape=reward.shape, device=reward.device, dtype=reward.dtype)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        rewards = output_spec["full_reward_spec"]
        observations = output_spec["full_observation_spec"]
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in rewards.keys(include_nested=True, leaves_only=True):
                raise KeyError(
                    f"RewardSum: expected the reward {in_key!r} in the env's reward spec, got "
                    f"{list(rewards.keys(include_nested=True, leaves_only=True))}."
                )
            spec = self._sum_spec(rewards[in_key])
            observations[out_key] = spec
            self._reward_specs[out_key] = spec
        return output_spec

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        if len(self._reward_specs) != len(self.out_keys):
            env = self.parent
            if env is None:
                raise RuntimeError("RewardSum: reset outside an env; it needs the reward spec.")
            self.transform_output_spec(env.output_spec.clone())
        for out_key in self.out_keys:
            spec = self._reward_specs[out_key]
            zero = zeros(self, tuple(spec.shape), spec.dtype, spec.device)
            if type(out_key) is str:
                set_leaf(tensordict_reset, out_key, zero)
            else:
                tensordict_reset.set(out_key, zero)
        return tensordict_reset

    def _paths(self) -> list[tuple[tuple[str, ...], tuple[str, ...], NestedKey]]:
        """``(reward path, sum path, sum key)`` per in/out key pair, built once per key list."""
        cached = self.__dict__.get("_path_cache")
        keys = (tuple(self.in_keys), tuple(self.out_keys))
        if cached is None or cached[0] != keys:
            paths = [
                (
                    (i,) if isinstance(i, str) else tuple(i),
                    (o,) if isinstance(o, str) else tuple(o),
                    o,
                )
                for i, o in zip(self.in_keys, self.out_keys)
            ]
            cached = self.__dict__["_path_cache"] = (keys, paths)
        return cached[1]

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        paths = self._paths()
        if len(paths) == 1 and is_plain(tensordict) and is_plain(next_tensordict):
            # One reward, both TensorDicts plain: the loop below with get_leaf inlined (every
            # env step runs it).
            ((in_path, out_path, out_key),) = paths
            if len(out_path) == 1 and len(in_path) == 1:
                total = entries(tensordict).get(out_key, None)
                reward = entries(next_tensordict).get(in_path[0], None)
                if total is not None and reward is not None:
                    set_leaf(next_tensordict, out_key, torch.add(total, reward))
                    return next_tensordict
        for in_path, out_path, out_key in paths:
            total = get_leaf(tensordict, out_path, None)
            if total is None:
                raise KeyError(
                    f"RewardSum: expected the running sum {out_key!r} in the TensorDict given to "
                    f"step; reset writes it. Reset the env first."
                )
            next_tensordict.set(out_key, torch.add(total, get_leaf(next_tensordict, in_path)))
        return next_tensordict

    def _lane_plan(self, lane: RowLane) -> _SumPlan | None:
        """The numpy-row plan of this transform (``rl_core.transforms._lane``): one
        root-level reward."""
        if len(self.in_keys) != 1 or type(self.in_keys[0]) is not str:
            return None
        if type(self.out_keys[0]) is not str:
            return None
        return _SumPlan(self, lane)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        # Outside an env there is no episode to sum over: leave the data as it is.
        return tensordict


__all__ = ["RewardSum"]
