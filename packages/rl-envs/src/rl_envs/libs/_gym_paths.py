"""GymWrapper's paths on numpy rows: the fused step-and-reset and the random rollout.

A mixin of :class:`~rl_envs.libs.GymWrapper`, kept apart from its construction and its
generic ``_step``/``_reset``. Both paths apply only where ``_gym_stepper.numpy_rows_apply``
holds (one array observation on the CPU, no info entries, a class stepping as ``GymWrapper``
does), and give what the generic loop gives; the oracle tests compare them with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import spec_checks_enabled
from rl_core.fast_td import build_tensordict, entries, get_leaf, set_leaf
from rl_core.keys import ACTION, DONE, OBSERVATION, TERMINATED, TRUNCATED
from rl_envs.libs._gym_codecs import require
from rl_envs.libs._gym_rollout import plan_random_rollout, random_rollout
from rl_envs.libs._gym_stepper import GymNumpyStepper, numpy_rows_apply, runs_own_steps

if TYPE_CHECKING:
    from rl_envs.libs.gym import GymWrapper


class GymRowPaths:
    """The numpy-row paths of :class:`~rl_envs.libs.GymWrapper` (a mixin of it)."""

    def _step_and_reset(
        self: GymWrapper, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, Any] | None:
        """``step_and_maybe_reset`` in one go on numpy rows: the step, then the reset of the
        finished sub-envs (``GymNumpyStepper.reset_finished``), their rows merged by
        :meth:`_merge_reset_rows`. Only where ``numpy_stepper()`` applies and spec checks are
        off (they check each reset output); ``None`` (step then reset) elsewhere. The oracle
        test compares it with ``step`` then ``reset``."""
        applies = self._cache.get("numpy_rows_apply")
        if applies is None:
            applies = self._cached("numpy_rows_apply", lambda: numpy_rows_apply(self))
        if not applies or self._info_readers or spec_checks_enabled():
            return None
        rows = self._rows
        if not self._rows_only:
            next_td = self._step(tensordict)
        else:
            # ``_step`` where every output goes into the row blocks, with fewer calls (this
            # runs between two gymnasium steps, where each call is slow): one action entry,
            # outputs on the CPU (numpy_rows_apply holds).
            action = entries(tensordict).get(ACTION) if type(tensordict) is TensorDict else None
            if action is None:
                action = require(tensordict, ACTION, self.name)
            next_td = build_tensordict(
                rows.step(self._stepper, action), self.batch_size, self._cpu_device
            )
        done = rows.finished
        if done is None:
            return next_td, None
        return next_td, self._stepper.reset_finished(done)

    def _merge_reset_rows(
        self: GymWrapper, next_root: TensorDictBase, pending: tuple[np.ndarray | None, Any]
    ) -> TensorDictBase:
        """What ``reset(next_root)`` gives with the finished sub-envs' ``"_reset"`` mask:
        their rows of the observation from gymnasium's reset, the others kept, the done
        flags all False (a sub-env that did not finish has all three False already)."""
        mask, obs = pending
        rows = self._reset_rows
        if rows.observation is not None:
            # A small observation: the merged rows go into the next block row (no torch call;
            # the block's dtype is the space's, as the decoded reset observation's).
            previous = None if mask is None else get_leaf(next_root, (OBSERVATION,)).numpy()
            for key, value in rows.write_reset(previous, mask, obs).items():
                set_leaf(next_root, key, value)
            return next_root
        fresh = self._observations(obs)[OBSERVATION]
        if mask is not None:
            merged = get_leaf(next_root, (OBSERVATION,)).numpy().copy()
            merged[mask] = fresh.numpy()[mask]
            fresh = torch.from_numpy(merged)
        set_leaf(next_root, OBSERVATION, fresh)
        for key, flag in zip((DONE, TERMINATED, TRUNCATED), self._reset_flags(), strict=True):
            set_leaf(next_root, key, flag)
        return next_root

    def _reset_entries(
        self: GymWrapper, pending: tuple[np.ndarray | None, Any]
    ) -> dict[str, torch.Tensor] | None:
        """What :meth:`_merge_reset_rows` writes, as a dict, where every sub-env was reset
        and the observation is a small one (written into the next block row); else
        ``None``, having written nothing. ``None`` too in a subclass that overrides
        ``_merge_reset_rows``: its own merge runs."""
        mask, obs = pending
        rows = self._reset_rows
        if (
            rows.observation is None
            or (mask is not None and not mask.all())
            or type(self)._merge_reset_rows is not GymRowPaths._merge_reset_rows
        ):
            return None
        return rows.write_reset(None, None, obs)

    def _numpy_rows(self: GymWrapper) -> list[tuple[torch.Tensor, np.ndarray]]:
        """The reward and small observation of the last step and of the last fused reset,
        with the numpy rows they are views of (``StepRows.numpy_rows``); transforms with
        lane plans compute on them (see ``EnvBase._numpy_rows``)."""
        return self._rows.numpy_rows() + self._reset_rows.numpy_rows()

    def _random_rollout(
        self: GymWrapper,
        start: TensorDictBase,
        max_steps: int,
        *,
        break_when_any_done: bool,
        break_when_all_done: bool,
    ) -> TensorDictBase | None:
        """Random-action rollouts run a plain gymnasium loop (see ``_gym_rollout``)."""
        if self._info_readers or not runs_own_steps(self):
            return None
        # Info readers are checked above: they can be added after the plan is cached.
        plan = self._cached("random_rollout_plan", lambda: plan_random_rollout(self))
        if plan is None:
            return None
        return random_rollout(
            self,
            plan,
            start,
            max_steps,
            break_when_any_done=break_when_any_done,
            break_when_all_done=break_when_all_done,
        )

    def numpy_stepper(self: GymWrapper) -> GymNumpyStepper | None:
        """The stepper of this wrapper's gymnasium env, for paths that step it on numpy rows.

        Returns it where those paths give what ``step``/``reset`` give (see
        ``_gym_stepper.numpy_rows_apply``: one array observation, no pixels or info entries,
        outputs on the CPU, not ``SAME_STEP``, and a class that does not override the step or
        reset methods); ``None`` elsewhere.

        Examples:
            >>> from rl_envs.libs import GymEnv
            >>> GymEnv("CartPole-v1").numpy_stepper() is not None
            True
        """
        return self._stepper if numpy_rows_apply(self) else None


__all__ = ["GymRowPaths"]
