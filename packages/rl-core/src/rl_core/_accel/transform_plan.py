"""The step plan of a TransformedEnv: every accelerated route of an env and its transforms.

``TransformedEnv`` holds the reference code only (``_step``: the inverse transforms, the base
env's step, done completion, the forward transforms; ``_reset``: the base env's reset, then
the transforms'). Where the base env has a step plan (:class:`~rl_core.envs.StepPlan`), this
plan builds on it, once per stack:

- the numpy-row lane (``lane``): where the base env's outputs are numpy rows and every
  transform has a registered lane plan, the transforms' step and reset run on the rows;
- the fused step-and-reset: where every transform is ``fusable`` (it maps the step and reset
  outputs only) and none intercepts resets, the base env's plan steps and resets its finished
  sub-envs in one call; the transforms' ``_step`` runs on the step output and their
  ``_reset`` on the base env's reset rows, completed as ``reset`` completes them, so the
  result is ``step`` then ``reset`` of the finished sub-envs;
- the direct reset: where the base env gives the reset entries of all sub-envs at once
  (``StepPlan.reset_entries``), the base env's next root is never built;
- the random-rollout replay (``replay``): the base env's random-action loop, the transforms
  replayed on its trajectory.

Whether each route applies is read once, when the plan is built (the stack's specs and
transform list are fixed until the env's cache is emptied); the rule for the plan as a whole
is ``rl_core.envs._plans.active_plan``. ``rl_core.testing.check_step_plan`` compares
the routes with the reference.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core._accel.fast_td import (
    batch_size_of,
    build_tensordict,
    device_of,
    entries,
    is_plain,
    only_tensors,
    set_leaf,
)
from rl_core._accel.flags import complete_done_flags, reset_masks
from rl_core._accel.lane import RowLane, build_lane
from rl_core._accel.replay import base_start, replay_random_rollout, replays
from rl_core._accel.stack import TransformedPlanEnv, TransformStack
from rl_core._accel.step_plan import StepPlan, fusable_as_declared
from rl_core.keys import DONE, NEXT, RESET


class TransformedEnvPlan(StepPlan):
    """The routes of a TransformedEnv over a base env with a plan (see the module docstring).

    Args:
        env: the TransformedEnv.
        base_plan: its base env's plan.
        stack: what the TransformedEnv read of its transforms.
    """

    env: TransformedPlanEnv

    def __init__(self, env: TransformedPlanEnv, base_plan: StepPlan, stack: TransformStack) -> None:
        super().__init__(env)
        self.base, self.base_plan, self.transform = env.base_env, base_plan, stack.transform
        self.stack = stack
        self.has_inverse = stack.has_inverse
        self.intercepts = stack.intercepts_reset
        self.fuses = (
            type(base_plan).step_and_reset is not StepPlan.step_and_reset
            and fusable_as_declared(self.transform)
            and not self.intercepts
        )
        self.lane: RowLane | None = build_lane(stack.lane_parts, base_plan)
        self.base_levels = self.base.done_levels()
        self.levels = env.done_levels()
        self.base_name = type(self.base).__name__
        self.root_plan = self._base_root_plan()
        self.direct = self.root_plan is not None and self.levels == [()]
        self.own = set() if self.root_plan is None else set(self.root_plan[1])
        self.replays = replays(env, base_plan, stack)

    # ------------------------------------------------------------------ step and reset
    def _base_step(self, tensordict: TensorDictBase, *, fused: bool) -> tuple[Any, Any] | None:
        """``TransformedEnv._step`` with the base env's plan for its step (``fused``: its
        step-and-reset) and the lane for the transforms; ``(next, pending)``."""
        base_plan = self.base_plan
        inner = self.transform.inv(tensordict) if self.has_inverse else tensordict
        pending = None
        if fused:
            out = base_plan.step_and_reset(inner)
            if out is None:
                return None
            next_tensordict, pending = out
        else:
            next_tensordict = base_plan.step(inner)
            if next_tensordict is None:
                next_tensordict = self.base._step(inner)
        complete_done_flags(next_tensordict, self.base_levels, self.base_name)
        if pending is not None:
            # The base env's outputs as it gave them, before the transforms map them: a
            # shallow copy, for a plain TensorDict of tensors its entries in a new dict with
            # its batch size and device (the direct reset of merge_reset_rows reads none).
            names = entries(next_tensordict) if is_plain(next_tensordict) else None
            if names and only_tensors(names.values()):
                kept = (dict(names), batch_size_of(next_tensordict), device_of(next_tensordict))
            else:
                kept = next_tensordict.copy()
            pending = (pending, kept)
        lane = self.lane
        if lane is not None:
            return lane.step(tensordict, next_tensordict), pending
        return self.transform._step(tensordict, next_tensordict), pending

    def step(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        if self.lane is None and type(self.base_plan).step is StepPlan.step:
            return None
        return self._base_step(tensordict, fused=False)[0]

    def reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase | None:
        if self.lane is None:
            return None
        return self.lane.reset(tensordict, self.env.base_reset(tensordict, **kwargs))

    def step_and_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, Any] | None:
        return self._base_step(tensordict, fused=True) if self.fuses else None

    # ------------------------------------------------------------------ fused reset
    def reset_with(self, next_root: TensorDictBase, base_reset: TensorDictBase) -> TensorDictBase:
        """``env.reset(next_root)`` where the base env's reset gave ``base_reset``: the
        transforms' reset of it, completed and merged as ``EnvBase.reset`` does."""
        env = self.env
        env.check_input_batch(next_root, "reset")
        masks = reset_masks(next_root, self.levels, len(env.batch_size))
        fresh = self._transform_reset(next_root, base_reset)
        return self.complete_reset(next_root, fresh, masks, self.levels)

    def _transform_reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        if self.lane is not None:
            return self.lane.reset(tensordict, tensordict_reset)
        return self.transform._reset(tensordict, tensordict_reset)

    def merge_reset_rows(self, next_root: TensorDictBase, pending: Any) -> TensorDictBase:
        base_pending, base_next = pending
        env, base_plan = self.env, self.base_plan
        if self.direct and type(next_root) is TensorDict:
            found = base_plan.reset_entries(base_pending)
            if found is not None and found.keys() >= self.own:
                return self._reset_directly(next_root, found)
        self.mark_finished(next_root)
        # The base env's next root as ``reset`` hands it to the base env (this env's outputs
        # left out, see ``TransformedEnv.base_reset``), holding the base env's own
        # observations and flags.
        if type(base_next) is tuple:
            # (entries, batch size, device) of a plain TensorDict of tensors, as _base_step
            # kept them.
            base_next = build_tensordict(*base_next)
        plan = self.root_plan
        if plan is not None and is_plain(next_root) and is_plain(base_next):
            # Root-level keys only: the same entries, picked from the entry dicts.
            hidden, own = plan
            found = entries(base_next)
            base_root = _base_root(next_root, hidden, {k: found[k] for k in own})
        else:
            base = self.base
            base_root = next_root.exclude(*env.outputs_hidden_from_base(), *env.reset_keys)
            for key in (*base.observation_keys, *base.done_keys):
                base_root.set(key, base_next.get(key))
        return self.reset_with(next_root, base_plan.merge_reset_rows(base_root, base_pending))

    def _reset_directly(self, next_root: TensorDict, found: dict[str, torch.Tensor]) -> Any:
        """``reset(next_root)`` after a reset of every sub-env whose entries the base env
        gave (``reset_entries``): the base env's root built as :meth:`merge_reset_rows`
        builds it, holding those entries, then the transforms' reset (given ``next_root``
        with its ``"_reset"`` masks, as ``reset`` gives it) and ``reset``'s completion and
        merge, with no masks: every one is set.

        Every sub-env finished, so the ``"_reset"`` mask that ``mark_finished`` would write
        is the ``done`` flag itself (root-level flags: ``self.direct``)."""
        set_leaf(next_root, RESET, entries(next_root)[DONE])
        hidden = self.root_plan[0]
        fresh = self._transform_reset(next_root, _base_root(next_root, hidden, found))
        return self.complete_reset(next_root, fresh, None, [()])

    def _base_root_plan(self) -> tuple[set[str], list[str]] | None:
        """For :meth:`merge_reset_rows`: the root keys left out of the base env's root and
        the base env's own observations and flags; ``None`` when a key is nested."""
        env, base = self.env, self.base
        hidden = [*env.outputs_hidden_from_base(), *env.reset_keys, NEXT]
        own = [*base.observation_keys, *base.done_keys]
        if not all(isinstance(k, str) for k in (*hidden, *own)):
            return None
        return set(hidden), own

    # ------------------------------------------------------------------ random rollout
    def random_rollout(
        self,
        start: TensorDictBase,
        max_steps: int,
        *,
        break_when_any_done: bool,
        break_when_all_done: bool,
    ) -> TensorDictBase | None:
        """The base env's random-action loop with the transforms replayed on its trajectory
        (``replay``), where the transforms only map the env's outputs; else ``None``."""
        if not self.replays:
            return None
        base_root = base_start(self.env, start)
        if base_root is None:
            return None
        traj = self.base_plan.random_rollout(
            base_root,
            max_steps,
            break_when_any_done=break_when_any_done,
            break_when_all_done=break_when_all_done,
        )
        if traj is None:
            return None
        return replay_random_rollout(
            self, start, traj, max_steps, break_when_any_done=break_when_any_done
        )


def _base_root(next_root: TensorDict, hidden: set[str], own: dict[str, torch.Tensor]) -> Any:
    """The base env's next root for a fused reset: ``next_root``'s root entries but
    ``hidden`` (see ``_base_root_plan``), then ``own`` (the base env's observations and
    flags)."""
    source = {k: v for k, v in entries(next_root).items() if k not in hidden}
    source.update(own)
    return build_tensordict(source, batch_size_of(next_root), device_of(next_root))


__all__ = ["TransformedEnvPlan"]
