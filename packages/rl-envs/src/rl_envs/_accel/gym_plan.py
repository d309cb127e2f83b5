"""GymWrapper's step plan: every accelerated route of a gymnasium env, in one module.

:class:`~rl_envs.libs.GymWrapper` holds the reference ``_step``/``_reset``; its step plan
(:class:`~rl_core.envs.StepPlan`, built by ``GymWrapper._make_step_plan`` through the seam)
owns the routes on numpy rows: the fused step-and-reset, the reset entries and numpy rows that
a TransformedEnv's lane reads, and the random rollout (a plain gymnasium loop,
``gym_rollout``). It reads the wrapper through ``GymPlanEnv``. The routes apply
only where ``gym_parts.numpy_rows_apply`` holds (one array observation on the CPU, no info
entries, a class stepping as ``GymWrapper`` does), and give what the reference gives;
``rl_core.testing.check_step_plan`` compares them with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core._accel.td_access import build_tensordict, get_leaf, set_leaf
from rl_core.envs import StepPlan
from rl_core.keys import ACTION, DONE, NEXT, OBSERVATION, RESET, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Composite
from rl_envs._accel.action_rows import one_hot_rows
from rl_envs._accel.gym_parts import GymPlanEnv, numpy_rows_apply, runs_own_steps
from rl_envs._accel.gym_rollout import plan_random_rollout, random_rollout

_UNREAD: Any = object()


class GymStepPlan(StepPlan):
    """The step plan of a :class:`~rl_envs.libs.GymWrapper` (see the module docstring).

    Args:
        env: the wrapper.
    """

    reads_actions_only = True  # the gymnasium env holds the state: _step reads the actions

    def __init__(self, env: GymPlanEnv) -> None:
        super().__init__(env)
        self.wrapper = env
        # One action entry (not a Composite of them, which the encoder reads entry by entry).
        self.single_action = not isinstance(env.action_spec, Composite)
        # Read on first use, for the life of the plan (rebuilt with the wrapper's specs, which
        # an info reader changes).
        self.rows_apply: bool | None = None
        self.rollout_plan: Any = _UNREAD
        self.action_rows: Any = _UNREAD
        self.rows_step: bool | None = None
        # With rows_step: the root entries that step_mdp drops (see _next_root_rules).
        self.root_skip: frozenset[str] = frozenset()

    def step(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        """``_step`` where every output goes into the row blocks (``_rows_only``, no info
        reader): gymnasium's arrays copied once into the rows, the action read from a plain
        TensorDict's entry dict; ``None`` elsewhere."""
        env = self.wrapper
        if not env._rows_only or env._info_readers:
            return None
        action = get_leaf(tensordict, (ACTION,), None) if self.single_action else None
        if action is None:
            action = env._read_action(tensordict)
        td = build_tensordict(env._rows.step(env._stepper, action), env.batch_size, env._cpu_device)
        target = env._target_device
        return td if target is None else td.to(target, non_blocking=True)

    def step_and_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, Any] | None:
        """``step_and_maybe_reset`` in one go on numpy rows: the step, then the reset of the
        finished sub-envs (``GymNumpyStepper.reset_finished``), their rows merged by
        :meth:`merge_reset_rows`. Only where ``numpy_rows_apply`` holds and no info reader is
        set; ``None`` (step then reset) elsewhere."""
        env = self.wrapper
        applies = self.rows_apply
        if applies is None:
            applies = self.rows_apply = numpy_rows_apply(env)
        if not applies or env._info_readers:
            return None
        rows = env._rows
        if not env._rows_only:
            next_td = env._step(tensordict)
        else:
            # ``_step`` where every output goes into the row blocks, with fewer calls (this
            # runs between two gymnasium steps, where each call is slow): one action entry,
            # outputs on the CPU (numpy_rows_apply holds).
            action = get_leaf(tensordict, (ACTION,), None)
            if action is None:
                action = env._read_action(tensordict)  # one action entry: raises naming it
            next_td = build_tensordict(
                rows.step(env._stepper, action), env.batch_size, env._cpu_device
            )
        done = rows.finished
        if done is None:
            return next_td, None
        return next_td, env._stepper.reset_finished(done)

    def _row_action(self, tensordict: TensorDictBase) -> Any:
        """The action entry of a plain ``tensordict`` where a step writes every output into
        the row blocks (``numpy_rows_apply``, ``_rows_only``, no info reader, the done flags
        at the root only: a row holds all three), else ``None``."""
        env = self.wrapper
        applies = self.rows_step
        if applies is None:
            if self.rows_apply is None:
                self.rows_apply = numpy_rows_apply(env)
            applies = bool(self.rows_apply and env._rows_only and self.env.done_levels() == [()])
            skip = self._next_root_rules() if applies else None
            applies = self.rows_step = skip is not None
            if applies:
                self.root_skip = skip
        if applies and type(tensordict) is TensorDict and not env._info_readers:
            return tensordict._tensordict.get(ACTION)
        return None

    def _next_root_rules(self) -> frozenset[str] | None:
        """The root entries that ``step_mdp`` (the env's ``step_mdp_plan``) drops from a
        transition whose ``"next"`` is a step row (the observation, reward and done flags,
        all tensors): ``"next"``, ``"_reset"``, the action and reward entries and the names
        the row holds; ``None`` where a key is nested (the level-by-level merge then runs).
        The next root is then the other root entries, then the row's entries but the reward,
        in the row's order: what ``step_mdp`` gives for flat rules."""
        mdp = self.env.step_mdp_plan()
        keys = [*mdp.action_keys, *mdp.reward_keys, *mdp.done_keys]
        if not all(type(key) is str for key in keys) or mdp.reward_keys != [REWARD]:
            return None
        observation = self.wrapper._rows.observation[0]
        row = (observation, REWARD, DONE, TERMINATED, TRUNCATED)
        if set(mdp.done_keys) != {DONE, TERMINATED, TRUNCATED}:
            return None
        return frozenset((NEXT, RESET, *mdp.action_keys, *row))

    def full_step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """``env.step(tensordict)``: where :meth:`_row_action` finds the action, the step
        stepped straight into the next row and written under ``"next"`` (the row holds all
        three done flags: nothing to complete); the generic route elsewhere."""
        action = self._row_action(tensordict)
        if action is None:
            return super().full_step(tensordict)
        env = self.wrapper
        next_td = build_tensordict(
            env._rows.step(env._stepper, action), env.batch_size, env._cpu_device
        )
        set_leaf(tensordict, NEXT, next_td)
        return tensordict

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """``env.step_and_maybe_reset(tensordict)``: where :meth:`_row_action` finds the
        action, the route of :meth:`step_and_reset` in one call: the action stepped straight
        into the next row (which holds all three done flags: nothing to complete), the step's
        TensorDict written under ``"next"``, ``step_mdp``, and the finished sub-envs' rows
        merged by :meth:`merge_reset_rows`; the generic route elsewhere."""
        env = self.wrapper
        action = self._row_action(tensordict)
        if action is None:
            return super().step_and_maybe_reset(tensordict)
        rows = env._rows
        row = rows.step(env._stepper, action)
        batch, device = env.batch_size, env._cpu_device
        set_leaf(tensordict, NEXT, build_tensordict(row, batch, device))
        # step_mdp of the transition (see _next_root_rules): the root entries it keeps, then
        # the row's entries but the reward. Inline: this runs between two gymnasium steps.
        skip = self.root_skip
        kept = {n: v for n, v in tensordict._tensordict.items() if n not in skip}
        del row[REWARD]
        kept.update(row)
        next_root = build_tensordict(kept, batch, device)
        done = rows.finished
        if done is not None:
            next_root = self.merge_reset_rows(next_root, env._stepper.reset_finished(done))
        return tensordict, next_root

    def merge_reset_rows(
        self, next_root: TensorDictBase, pending: tuple[np.ndarray | None, Any]
    ) -> TensorDictBase:
        """What ``reset(next_root)`` gives with the finished sub-envs' ``"_reset"`` mask:
        their rows of the observation from gymnasium's reset, the others kept, the done
        flags all False (a sub-env that did not finish has all three False already)."""
        env = self.wrapper
        mask, obs = pending
        rows = env._reset_rows
        if rows.observation is not None:
            # A small observation: the merged rows go into the next block row (no torch call;
            # the block's dtype is the space's, as the decoded reset observation's).
            previous = None if mask is None else get_leaf(next_root, (OBSERVATION,)).numpy()
            for key, value in rows.write_reset(previous, mask, obs).items():
                set_leaf(next_root, key, value)
            return next_root
        fresh = env._observations(obs)[OBSERVATION]
        if mask is not None:
            merged = get_leaf(next_root, (OBSERVATION,)).numpy().copy()
            merged[mask] = fresh.numpy()[mask]
            fresh = torch.from_numpy(merged)
        set_leaf(next_root, OBSERVATION, fresh)
        for key, flag in zip((DONE, TERMINATED, TRUNCATED), env._reset_flags(), strict=True):
            set_leaf(next_root, key, flag)
        return next_root

    def reset_entries(self, pending: tuple[np.ndarray | None, Any]) -> dict[str, Any] | None:
        """What :meth:`merge_reset_rows` writes, as a dict, where every sub-env was reset
        and the observation is a small one (written into the next block row); else
        ``None``, having written nothing."""
        mask, obs = pending
        rows = self.wrapper._reset_rows
        if rows.observation is None or (mask is not None and not mask.all()):
            return None
        return rows.write_reset(None, None, obs)

    def numpy_rows(self) -> list[tuple[torch.Tensor, np.ndarray]]:
        """The reward and small observation of the last step and of the last fused reset,
        with the numpy rows they are views of (``StepRows.numpy_rows``); transforms with
        lane plans compute on them."""
        env = self.wrapper
        return env._rows.numpy_rows() + env._reset_rows.numpy_rows()

    def rand_action(self, tensordict: TensorDictBase) -> TensorDictBase:
        """``env.rand_action(tensordict)``; an unmasked one-hot action is drawn into numpy
        rows (``action_rows``: the same torch draws as ``OneHot.rand``, one torch call)."""
        rows = self.action_rows
        if rows is _UNREAD:
            rows = self.action_rows = one_hot_rows(self.wrapper.action_spec)
        if rows is None or rows.spec.mask is not None:
            return super().rand_action(tensordict)
        set_leaf(tensordict, ACTION, rows.draw())
        return tensordict

    def random_rollout(
        self,
        start: TensorDictBase,
        max_steps: int,
        *,
        break_when_any_done: bool,
        break_when_all_done: bool,
    ) -> TensorDictBase | None:
        """Random-action rollouts run a plain gymnasium loop (see ``gym_rollout``)."""
        env = self.wrapper
        if env._info_readers or not runs_own_steps(env):
            return None
        # Info readers are checked above: they can be added after the plan is cached.
        plan = self.rollout_plan
        if plan is _UNREAD:
            plan = self.rollout_plan = plan_random_rollout(env)
        if plan is None:
            return None
        return random_rollout(
            env,
            plan,
            start,
            max_steps,
            break_when_any_done=break_when_any_done,
            break_when_all_done=break_when_all_done,
        )


__all__ = ["GymStepPlan"]
