"""The numpy-row lane of a TransformedEnv: transforms computed on numpy rows, where they can.

In a rollout loop each small torch call is slow: its code has gone cold since the previous
step (the env, the policy and TensorDict bookkeeping ran in between), so a transform that
adds two one-element tensors costs several microseconds for a nanosecond of arithmetic, and
so does each layer of generic Python around it. Envs whose outputs are views of numpy rows
(``GymWrapper`` on a small observation) say which numpy array each such output shares its
memory with (their step plan's ``StepPlan.numpy_rows``). A transform whose type has a lane
plan registered here (:func:`register_lane_plan`, built once per lane) then computes its outputs on those arrays with numpy, straight on the entry dicts
of the step's TensorDicts, into fresh rows that the lane hands out (:meth:`RowLane.rows`) and
that the next step reads back as numpy arrays (:meth:`RowLane.numpy`).

A plan's ``step(root, nxt, next_tensordict)`` / ``reset(fresh, tensordict_reset)`` (the entry
dicts of the step's root and next TensorDicts, or of the reset's output, and the TensorDict
whose entries ``nxt`` / ``fresh`` are) return ``False``, having written
nothing, wherever they cannot give exactly what the transform's ``_step`` / ``_reset`` give
(the transform's settings changed since the plan was built, an input is not a row, another
dtype or shape), and the lane runs those instead; a transform without a plan, or whose class
overrides a step or reset method below the registered class, always runs them. Plans live
beside this machinery (``lane_plans`` for rl-core's transforms), never inside the
transform's own class: a transform is correct without one. The arithmetic on rows is the torch path's (the same IEEE operations), and the
oracle tests compare the two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core._accel.fast_td import entries, writable_entries
from rl_core._accel.rows import Rows
from rl_core._accel.step_plan import StepPlan

# Methods that, overridden below the registered class, turn its lane plan off.
_STEP_METHODS = ("_call", "_step", "_reset", "_apply_transform")

# Transform type -> the factory of its lane plan: ``factory(transform, lane)`` gives the
# plan, or ``None`` for settings it does not support.
_REGISTRY: dict[type, Callable[[Any, RowLane], Any]] = {}


def register_lane_plan(kind: type) -> Callable[[Callable], Callable]:
    """Registers ``factory(transform, lane) -> plan | None`` as the lane plan of the
    transform type ``kind`` (and of subclasses that override none of its step and reset
    methods). Used as a decorator.
    """

    def register(factory: Callable) -> Callable:
        _REGISTRY[kind] = factory
        return factory

    return register


def lane_plan_factory(transform: Any) -> Callable | None:
    """The registered lane plan factory of ``transform``: that of the nearest registered class
    of its type, where no class below that one overrides a step or reset method; else
    ``None``."""
    cls = type(transform)
    registered = next((k for k in cls.__mro__ if k in _REGISTRY), None)
    if registered is None:
        return None
    if any(getattr(cls, name) is not getattr(registered, name) for name in _STEP_METHODS):
        return None
    return _REGISTRY[registered]


class RowLane:
    """Runs a TransformedEnv's transforms on its steps and resets, on numpy rows where each
    transform's plan can (see the module docstring).

    Args:
        base_rows: the base env's plan's ``numpy_rows`` (the numpy arrays of its row
            outputs).
        transforms: the transforms, in order (a Compose's children).
    """

    def __init__(self, base_rows: Callable[[], list], transforms: list[Any]) -> None:
        self._base_rows = base_rows
        self._pools: dict[tuple[tuple[int, ...], np.dtype], Rows] = {}
        # Rows handed out during the current and the previous call, by id: the tensors a
        # step reads back (the previous step's outputs, the reset's zeros). Holding them
        # keeps their ids from being reused while they are looked up.
        self._current: dict[int, tuple[torch.Tensor, np.ndarray]] = {}
        self._previous: dict[int, tuple[torch.Tensor, np.ndarray]] = {}
        self._base: list | None = None  # the base env's rows, once asked for in this call
        factories = [lane_plan_factory(t) for t in transforms]
        self.parts = [
            (t, None if factory is None else factory(t, self))
            for t, factory in zip(transforms, factories, strict=True)
        ]

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

    def step(
        self,
        tensordict: TensorDictBase,
        next_tensordict: TensorDictBase,
        base_rows: list | None = None,
    ) -> TensorDictBase:
        """What ``transform._step(tensordict, next_tensordict)`` gives.

        ``base_rows``: the ``(tensor, numpy array)`` pairs of the base env's outputs in
        ``next_tensordict``, where the caller has them (the random-rollout replay, whose
        rows come from a trajectory); by default the base env's plan is asked."""
        self._turn()
        self._base = base_rows
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


def build_lane(parts: list[Any], base_plan: StepPlan) -> RowLane | None:
    """The lane of a TransformedEnv's transforms ``parts`` (a ``Compose``'s children, or the
    one transform; see ``TransformStack.lane_parts``) over a base env whose plan hands out
    numpy rows (overrides ``StepPlan.numpy_rows``), where every one of them has a lane plan;
    else ``None``.

    Every one: the lane pays where it removes the torch calls of a step altogether. With
    one transform left on torch, that transform's first call pays the cold start the others
    no longer pay (measured: ``RewardSum`` on rows beside a truncating ``StepCounter`` on
    torch made Pendulum's step slower), so such envs keep the torch path.
    """
    if type(base_plan).numpy_rows is StepPlan.numpy_rows:
        return None
    if not parts or any(lane_plan_factory(t) is None for t in parts):
        return None
    lane = RowLane(base_plan.numpy_rows, parts)
    return lane if all(plan is not None for _, plan in lane.parts) else None


__all__ = ["RowLane", "build_lane", "lane_plan_factory", "register_lane_plan"]
