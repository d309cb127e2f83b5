"""The rollout without a policy of a TransformedEnv: the base env's fast loop, then the
transforms replayed step by step on its trajectory.

``TransformedEnv.rollout()`` without a policy would step the base env one TensorDict at a
time. Where the base env's step plan has its own random-action loop
(``StepPlan.random_rollout``, e.g. ``GymEnv``'s gymnasium loop) and says its step reads only
the actions (``StepPlan.reads_actions_only``: in the generic loop it is handed the
transformed root), and the
transforms only map what the env gives (all ``fusable``, none intercepting resets, none on the
inverse path, the action spec as the base env's), the base env runs its loop and
:func:`replay_random_rollout` then walks its trajectory once with the generic loop's own
calls, the base env's step replaced by a row of the trajectory: the transforms' ``_step`` on
the base env's step output (through the numpy-row lane where the plan has one, the
trajectory's rows as the base env's numpy rows), ``_write_step``, ``step_mdp``, and at the end of an episode
``reset`` of the finished sub-envs fed the base env's reset output (the trajectory's next
root row) the way the fused step-and-reset feeds it. The result is what the generic loop
gives for the same actions; ``rl_core.testing.check_random_rollout`` verifies it (tests on
CartPole and vector envs with partial resets in rl-envs, on a stateful counting env here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
from tensordict import TensorDictBase

from rl_core._accel.fast_td import (
    batch_size_of,
    build_tensordict,
    device_of,
    entries,
    is_plain,
    set_leaf,
)
from rl_core._accel.flags import any_set
from rl_core._accel.stack import TransformedPlanEnv, TransformStack
from rl_core._accel.step_plan import StepPlan, fusable_as_declared
from rl_core.keys import DONE, NEXT

if TYPE_CHECKING:
    from rl_core._accel.lane import RowLane


class ReplayingPlan(Protocol):
    """What the replay reads of a TransformedEnv's plan (``TransformedEnvPlan`` has it)."""

    env: TransformedPlanEnv
    transform: Any
    stack: TransformStack
    lane: RowLane | None

    def write_step(self, tensordict: TensorDictBase, next_td: TensorDictBase) -> TensorDictBase: ...

    def mark_finished(self, root: TensorDictBase) -> bool: ...

    def reset_with(
        self, next_root: TensorDictBase, base_reset: TensorDictBase
    ) -> TensorDictBase: ...


def replays(env: TransformedPlanEnv, base_plan: StepPlan, stack: TransformStack) -> bool:
    """Whether the transforms of ``env`` can be replayed on the base env's random rollout:
    the base env has such a loop and its step reads only the actions (in the generic loop it
    is handed the transformed root: the same step only if it reads nothing the transforms
    change), the transforms map the env's outputs only, and every key involved sits at the
    root (str keys)."""
    base = env.base_env
    if type(base_plan).random_rollout is StepPlan.random_rollout:
        return False
    if not base_plan.reads_actions_only:
        return False
    keys = [
        *env.observation_keys,
        *env.done_keys,
        *env.reward_keys,
        *env.action_keys,
        *base.observation_keys,
        *base.done_keys,
        *base.reward_keys,
    ]
    return (
        fusable_as_declared(stack.transform)
        and not stack.intercepts_reset
        and not stack.has_inverse
        and not base.state_keys
        and env.full_action_spec == base.full_action_spec
        and all(type(key) is str for key in keys)
        and env.done_levels() == [()]
    )


def base_start(env: TransformedPlanEnv, start: TensorDictBase) -> TensorDictBase | None:
    """The root the base env's loop starts from: ``start``'s entries of the base env's
    observation and done keys (what the base env is given in the generic loop), or ``None``
    when ``start`` holds entries other than this env's outputs or they do not fit the base
    env's specs."""
    if not is_plain(start) or batch_size_of(start) != env.batch_size:
        return None
    names = entries(start)
    own = {*env.observation_keys, *env.done_keys, *env.state_keys}
    if any(name not in own for name in names):
        return None
    base = env.base_env
    source: dict[str, Any] = {}
    observations = base.observation_keys
    for key in (*observations, *base.done_keys):
        value = names.get(key)
        if type(value) is not torch.Tensor:
            return None
        spec = base.full_observation_spec[key] if key in observations else base.full_done_spec[key]
        if value.dtype != spec.dtype or value.shape != spec.shape:
            return None
        source[key] = value
    return build_tensordict(source, batch_size_of(start), device_of(start))


# Steps cut into per-step tensors at a time: a whole trajectory at once would keep thousands
# of views alive, which the garbage collector then scans again and again.
CHUNK = 64


def _numpy(value: torch.Tensor) -> np.ndarray | None:
    """The numpy array sharing ``value``'s memory, or ``None`` (not on the CPU, or a dtype
    numpy lacks)."""
    if value.device.type != "cpu":
        return None
    try:
        return value.numpy()
    except TypeError:
        return None


def _rows(
    values: dict[str, torch.Tensor], start: int, time_dim: int, numpy_rows: list | None = None
) -> dict[str, tuple[torch.Tensor, ...]]:
    """Per key, steps ``start`` to ``start + CHUNK`` as contiguous tensors, as the base env's
    step gives them (the transforms' ops then see the layouts of the generic loop).

    ``numpy_rows``: a list to fill, per step, with the ``(tensor, numpy array)`` pairs of
    the rows (what the numpy-row lane's plans read the base env's outputs from); left empty
    where a chunk is not on the CPU."""
    rows, arrays = {}, []
    for key, value in values.items():
        value = value.narrow(time_dim, start, min(CHUNK, value.shape[time_dim] - start))
        if time_dim:
            value = value.movedim(time_dim, 0).contiguous()
        rows[key] = value.unbind(0)
        if numpy_rows is not None:
            # One numpy view per chunk, iterated below into per-step views of its memory.
            arrays.append(_numpy(value))
    if numpy_rows is not None and all(array is not None for array in arrays):
        count = len(rows)
        for step in zip(*rows.values(), *arrays, strict=True):
            numpy_rows.append(list(zip(step[:count], step[count:], strict=True)))
    return rows


def replay_random_rollout(
    plan: ReplayingPlan,
    start: TensorDictBase,
    base_traj: TensorDictBase,
    max_steps: int,
    *,
    break_when_any_done: bool,
) -> TensorDictBase:
    """The generic loop's trajectory from ``start``, the base env's outputs read from
    ``base_traj`` (its random rollout from :func:`base_start` of ``start``); ``plan``: the
    TransformedEnv's plan."""
    env = plan.env
    base = env.base_env
    transform = plan.transform
    time_dim = len(env.batch_size)
    steps = base_traj.batch_size[time_dim]
    batch, device = batch_size_of(start), device_of(start)
    action_key = env.action_keys[0] if len(env.action_keys) == 1 else None
    action_values = {key: base_traj.get(key) for key in env.action_keys}
    next_td = base_traj.get(NEXT)
    next_keys = list(entries(next_td)) if is_plain(next_td) else list(next_td.keys())
    next_values = {key: next_td.get(key) for key in next_keys}
    next_device = device_of(next_td) if is_plain(next_td) else next_td.device
    # The base env's next roots, read at the steps that end an episode only.
    roots = {key: base_traj.get(key) for key in (*base.observation_keys, *base.done_keys)}
    index = (slice(None),) * time_dim
    mdp = env.step_mdp_plan()
    writer = plan.stack.trajectory_writer(max_steps)
    lane = plan.lane  # the transforms on numpy rows, where each has a lane plan
    numpy_rows: list = []
    td = start
    for t in range(steps):
        i = t % CHUNK
        if not i:
            actions = _rows(action_values, t, time_dim)
            numpy_rows = [] if lane is not None else None
            next_rows = _rows(next_values, t, time_dim, numpy_rows)
        # rand_action: the action (the base env drew it from the same spec).
        if action_key is not None:
            set_leaf(td, action_key, actions[action_key][i])
        else:
            for key, rows in actions.items():
                td.set(key, rows[i])
        # _base_step without the base env's step: its output is the trajectory's row.
        raw = build_tensordict(
            {key: rows[i] for key, rows in next_rows.items()}, batch, next_device
        )
        raw = lane.step(td, raw, numpy_rows[i]) if numpy_rows else transform._step(td, raw)
        td = plan.write_step(td, raw)
        writer.append(td)
        finished = any_set(entries(raw)[DONE])
        if break_when_any_done:
            if finished:
                break
            td = mdp(td)
            continue
        next_root = mdp(td)
        if t + 1 < steps and finished:
            # The fused reset: the finished sub-envs' "_reset" marks, and the base env's
            # reset output (its next root: reset rows for the finished sub-envs, the next
            # observations for the others, the flags False) given to the transforms' _reset.
            plan.mark_finished(next_root)
            row = (*index, t + 1)
            fresh = build_tensordict(
                {key: value[row].contiguous() for key, value in roots.items()}, batch, device
            )
            next_root = plan.reset_with(next_root, fresh)
        td = next_root
    return writer.result(return_contiguous=True)


__all__ = ["ReplayingPlan", "base_start", "replay_random_rollout", "replays"]
