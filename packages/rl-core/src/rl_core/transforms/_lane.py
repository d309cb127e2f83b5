"""The numpy-row lane of a TransformedEnv: transforms computed on numpy rows, where they can.

In a rollout loop each small torch call is slow: its code has gone cold since the previous
step (the env, the policy and TensorDict bookkeeping ran in between), so a transform that
adds two one-element tensors costs several microseconds for a nanosecond of arithmetic, and
so does each layer of generic Python around it. Envs whose outputs are views of numpy rows
(``GymWrapper`` on a small observation) say which numpy array each such output shares its
memory with (``EnvBase._numpy_rows``). A transform that has a lane plan (``_lane_plan(lane)``,
built once) then computes its outputs on those arrays with numpy, straight on the entry dicts
of the step's TensorDicts, into fresh rows that the lane hands out (:meth:`RowLane.rows`) and
that the next step reads back as numpy arrays (:meth:`RowLane.numpy`).

A plan's ``step(root, nxt, next_tensordict)`` / ``reset(fresh, tensordict_reset)`` (the entry
dicts of the step's root and next TensorDicts, or of the reset's output, and the TensorDict
whose entries ``nxt`` / ``fresh`` are) return ``False``, having written
nothing, wherever they cannot give exactly what the transform's ``_step`` / ``_reset`` give
(the transform's settings changed since the plan was built, an input is not a row, another
dtype or shape), and the lane runs those instead; a transform without a plan, or whose class
overrides a step, reset or plan method below the class that declared ``_lane_plan``, always
runs them. The arithmetic on rows is the torch path's (the same IEEE operations), and the
oracle tests compare the two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.fast_td import entries, writable_entries
from rl_core.transforms._rows import Rows
from rl_core.transforms.compose import Compose
from rl_core.transforms.transform import Transform

if TYPE_CHECKING:
    from rl_core.transforms.transformed_env import TransformedEnv


# Methods that, overridden below the class declaring the lane methods, turn them off.
_STEP_METHODS = ("_call", "_step", "_reset", "_apply_transform", "_lane_plan")


def lane_applies(transform: Transform) -> bool:
    """Whether ``transform``'s lane plan stands for its step and reset: its class (or one
    above it) declares ``_lane_plan``, and no class below that one overrides a step, reset
    or plan method."""
    cls = type(transform)
    declarer = next((k for k in cls.__mro__ if "_lane_plan" in vars(k)), Transform)
    if declarer is Transform:
        return False
    return all(getattr(cls, name) is getattr(declarer, name) for name in _STEP_METHODS)


class RowLane:
    """Runs a TransformedEnv's transforms on its steps and resets, on numpy rows where each
    transform's plan can (see the module docstring).

    Args:
        base: the TransformedEnv's base env (its ``_numpy_rows`` gives the numpy arrays of
            its row outputs).
        transforms: the transforms, in order (a Compose's children).
    """

    def __init__(self, base: EnvBase, transforms: list[Transform]) -> None:
        self.base = base
        self._base_rows = base._numpy_rows
        self._pools: dict[tuple[tuple[int, ...], np.dtype], Rows] = {}
        # Rows handed out during the current and the previous call, by id: the tensors a
        # step reads back (the previous step's outputs, the reset's zeros). Holding them
        # keeps their ids from being reused while they are looked up.
        self._current: dict[int, tuple[torch.Tensor, np.ndarray]] = {}
        self._previous: dict[int, tuple[torch.Tensor, np.ndarray]] = {}
        self._base: list | None = None  # the base env's rows, once asked for in this call
        self.parts = [(t, t._lane_plan(self) if lane_applies(t) else None) for t in transforms]

    def numpy(self, tensor: Any) -> np.ndarray | None:
        """The numpy array sharing ``tensor``'s memory, where ``tensor`` is a row output of
        the base env's last step or reset, or a row the lane handed out during this call or
        the previous one; else ``None``."""
        # The base env's rows first (what plans read most: its observations and rewards),
        # asked for once per call, on the first lookup.
        base = self._base
        if base is None:
            base = self._base = self._base_rows()
        for pair in base:
            if pair[0] is tensor:
                return pair[1]
        key = id(tensor)
        entry = self._current.get(key)
        if entry is None:
            entry = self._previous.get(key)
            if entry is None:
                return None
        return entry[1] if entry[0] is tensor else None

    def _turn(self) -> None:
        """Starts a call: the rows of the previous call stay known; the base env's rows are
        asked for again (by the first lookup that needs them)."""
        self._previous, self._current, self._base = self._current, {}, None

    def rows(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """A ``take()`` callable giving fresh rows of ``shape`` and ``dtype``: ``(tensor,
        numpy array)`` pairs of zeros sharing memory. The caller writes a row, if at all,
        before handing its tensor out, and never after."""
        pool = self._pools.get((shape, dtype))
        if pool is None:
            pool = self._pools[(shape, dtype)] = Rows(shape, dtype, self)
        return pool.take

    def step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        """What ``transform._step(tensordict, next_tensordict)`` gives."""
        self._turn()
        root = entries(tensordict) if type(tensordict) is TensorDict else None
        nxt = writable_entries(next_tensordict) if root is not None else None
        for transform, plan in self.parts:
            if nxt is None or plan is None or not plan.step(root, nxt, next_tensordict):
                next_tensordict = transform._step(tensordict, next_tensordict)
                nxt = writable_entries(next_tensordict) if root is not None else None
        return next_tensordict

    def reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        """What ``transform._reset(tensordict, tensordict_reset)`` gives."""
        self._turn()
        fresh = writable_entries(tensordict_reset)
        for transform, plan in self.parts:
            if fresh is None or plan is None or not plan.reset(fresh, tensordict_reset):
                tensordict_reset = transform._reset(tensordict, tensordict_reset)
                fresh = writable_entries(tensordict_reset)
        return tensordict_reset


def build_lane(env: TransformedEnv) -> RowLane | None:
    """The lane of ``env``, where its base env hands out numpy rows (overrides
    ``EnvBase._numpy_rows``) and every one of its transforms has a lane plan; else ``None``.

    Every one: the lane pays where it removes the torch calls of a step altogether. With
    one transform left on torch, that transform's first call pays the cold start the others
    no longer pay (measured: ``RewardSum`` on rows beside a truncating ``StepCounter`` on
    torch made Pendulum's step slower), so such envs keep the torch path.
    """
    base = env.base_env
    if type(base)._numpy_rows is EnvBase._numpy_rows:
        return None
    transform = env.transform
    parts = list(transform) if type(transform) is Compose else [transform]
    if not parts or not all(lane_applies(t) for t in parts):
        return None
    lane = RowLane(base, parts)
    return lane if all(plan is not None for _, plan in lane.parts) else None


__all__ = ["RowLane", "build_lane", "lane_applies"]
