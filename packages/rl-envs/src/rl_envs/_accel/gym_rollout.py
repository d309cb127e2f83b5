"""GymWrapper's rollout with random actions: a gymnasium loop that writes into numpy blocks.

``EnvBase.rollout`` without a policy hands the loop to ``_random_rollout``. For a gymnasium env
whose observation is one array and whose action is one array (or index), the loop needs no
TensorDict and no torch call per step: actions are drawn from the action spec ``CHUNK`` steps
at a time and encoded for gymnasium in one call, each step writes its observation, reward and
flags into rows of numpy blocks, and the trajectory TensorDict is built once at the end. The
result is what the generic loop gives for the same actions (``check_random_rollout`` in the
conformance kit replays them to verify it): the same entries, the same resets (finished
sub-envs reset through ``reset_mask``, the final observation kept under ``"next"``; none after
the last step), the same stopping rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core._accel.td_access import entries_view
from rl_core.keys import ACTION, DONE, NEXT, OBSERVATION, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import TensorSpec
from rl_envs._accel.gym_parts import GymPlanEnv, gym_parts, numpy_stepper

# Actions drawn (and encoded) at once.
CHUNK = 256


class RandomRolloutPlan(NamedTuple):
    """What the loop needs from a wrapper, built once."""

    stepper: Any  # the wrapper's GymNumpyStepper
    key: str  # the observation entry
    shape: tuple[int, ...]  # one sub-env's observation shape
    dtype: np.dtype
    actions: TensorSpec  # the action spec with a leading dim of CHUNK
    encode: Any  # CHUNK actions -> an array whose rows gymnasium takes


def plan_random_rollout(wrapper: GymPlanEnv) -> RandomRolloutPlan | None:
    """The plan of the fast loop for ``wrapper``, or None where the generic loop must run
    (see ``gym_parts.numpy_stepper``)."""
    stepper = numpy_stepper(wrapper)
    parts = gym_parts()
    if stepper is None or parts is None:
        return None
    batch = tuple(wrapper.batch_size)
    shape = tuple(wrapper.observation_spec[OBSERVATION].shape[len(batch) :])
    dtype = np.dtype(wrapper.single_observation_space.dtype)
    spec = wrapper.action_spec
    actions = spec.expand(CHUNK, *spec.shape)
    encode = parts.make_encoder(wrapper.single_action_space, actions, (CHUNK, *batch))
    return RandomRolloutPlan(stepper, OBSERVATION, shape, dtype, actions, encode)


def random_rollout(
    wrapper: GymPlanEnv,
    plan: RandomRolloutPlan,
    start: TensorDictBase,
    max_steps: int,
    *,
    break_when_any_done: bool,
    break_when_all_done: bool,
) -> TensorDictBase | None:
    """The trajectory of ``wrapper.rollout(max_steps)`` with random actions from ``start``.

    Returns None (run the generic loop) when ``start`` holds anything but the observation and
    the done flags, as a reset gives them.
    """
    batch = tuple(wrapper.batch_size)
    first = _start_entries(start, plan.key, batch)
    if first is None:
        return None
    obs = np.empty((max_steps + 1, *batch, *plan.shape), dtype=plan.dtype)
    reward = np.zeros((max_steps, *batch), dtype=np.float32)
    terminated = np.zeros((max_steps, *batch), dtype=np.bool_)
    truncated = np.zeros((max_steps, *batch), dtype=np.bool_)
    obs[0] = first[0]
    sampled: list[torch.Tensor] = []
    finals, steps = _loop(
        plan.stepper,
        _actions(plan, sampled),
        obs,
        reward,
        terminated,
        truncated,
        break_when_any_done=break_when_any_done,
        break_when_all_done=break_when_all_done,
    )
    # The row after a step holds the next root: the observation, or the reset observation of
    # sub-envs that finished; their final observations go back into the "next" entries.
    next_obs = obs[1 : steps + 1].copy()
    for t, rows, final in finals:
        next_obs[t][rows] = final
    return _trajectory(
        wrapper,
        plan.key,
        steps,
        root_obs=obs[:steps],
        next_obs=next_obs,
        first_flags=first[1],
        action=torch.cat(sampled)[:steps],
        reward=reward[:steps],
        terminated=terminated[:steps],
        truncated=truncated[:steps],
    )


def _start_entries(
    start: TensorDictBase, key: str, batch: tuple[int, ...]
) -> tuple[np.ndarray, tuple[torch.Tensor, ...]] | None:
    """The start observation (numpy) and done flags, or None if ``start`` holds more."""
    if type(start) is not TensorDict or tuple(start.batch_size) != batch:
        return None
    names = entries_view(start)
    if len(names) != 4:
        return None
    try:
        values = [names[name] for name in (key, DONE, TERMINATED, TRUNCATED)]
    except KeyError:
        return None
    if any(type(value) is not torch.Tensor or not value.is_cpu for value in values):
        return None
    return values[0].numpy(), tuple(values[1:])


def _actions(plan: RandomRolloutPlan, sampled: list[torch.Tensor]) -> Iterator[Any]:
    """Encoded random actions, one per step, drawn ``CHUNK`` at a time (kept in ``sampled``)."""
    while True:
        chunk = plan.actions.rand()
        sampled.append(chunk)
        yield from plan.encode(chunk)


def _loop(
    stepper: Any,
    actions: Iterator[Any],
    obs: np.ndarray,
    reward: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    *,
    break_when_any_done: bool,
    break_when_all_done: bool,
) -> tuple[list[tuple[int, Any, np.ndarray]], int]:
    """Steps into the blocks (step ``t`` writes its observation to ``obs[t + 1]``); returns
    ``(t, finished rows, final observations)`` per step at which sub-envs finished, and the
    number of steps taken."""
    blocks = (obs[1:], reward, None, terminated, truncated)
    step_at, reset_finished_at = stepper.step_at, stepper.reset_finished_at
    finals: list[tuple[int, Any, np.ndarray]] = []
    ever_done = np.zeros(reward.shape[1:], dtype=np.bool_)
    max_steps = len(reward)
    for t, action in zip(range(max_steps), actions):
        done = step_at(action, blocks, t, encoded=True)
        if done is None:
            continue
        finals.append((t, done, obs[t + 1][done]))
        if break_when_any_done:
            return finals, t + 1
        if t + 1 < max_steps:  # as the generic loop: no reset after the last step
            reset_finished_at(done, obs, t + 1)
        ever_done |= done
        if break_when_all_done and ever_done.all():
            return finals, t + 1
    return finals, max_steps


def _trajectory(
    wrapper: GymPlanEnv,
    key: str,
    steps: int,
    *,
    root_obs: np.ndarray,
    next_obs: np.ndarray,
    first_flags: tuple[torch.Tensor, ...],
    action: torch.Tensor,
    reward: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
) -> TensorDict:
    """The ``[*batch, steps]`` TensorDict of the generic loop from time-major blocks."""
    batch_ndim = len(wrapper.batch_size)

    def batch_first(value: np.ndarray | torch.Tensor) -> torch.Tensor:
        value = torch.from_numpy(value) if isinstance(value, np.ndarray) else value
        return value.movedim(0, batch_ndim).contiguous() if batch_ndim else value

    flag_shape = (steps, *wrapper.batch_size, 1)
    # The root flags: those of the start, then False (after a step that did not finish, or
    # after a reset).
    root_flags = {}
    for name, first in zip((DONE, TERMINATED, TRUNCATED), first_flags):
        flags = torch.zeros(flag_shape, dtype=torch.bool)
        flags[0] = first
        root_flags[name] = batch_first(flags)
    terminated_t = torch.from_numpy(terminated).unsqueeze(-1)
    truncated_t = torch.from_numpy(truncated).unsqueeze(-1)
    size = (*wrapper.batch_size, steps)
    next_td = TensorDict(
        {
            key: batch_first(next_obs),
            REWARD: batch_first(torch.from_numpy(reward).unsqueeze(-1)),
            DONE: batch_first(terminated_t | truncated_t),
            TERMINATED: batch_first(terminated_t),
            TRUNCATED: batch_first(truncated_t),
        },
        batch_size=size,
        device=wrapper.device,  # the CPU: numpy_rows_apply holds
    )
    return TensorDict(
        {key: batch_first(root_obs), ACTION: batch_first(action), **root_flags, NEXT: next_td},
        batch_size=size,
        device=wrapper.device,  # the CPU: numpy_rows_apply holds
    )


__all__ = [
    "CHUNK",
    "RandomRolloutPlan",
    "plan_random_rollout",
    "random_rollout",
]
