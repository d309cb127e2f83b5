"""The rollout loop behind ``EnvBase.rollout`` (its steps go into a :class:`TrajectoryWriter`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
from tensordict import TensorDictBase

from rl_core._accel.seam import PolicyCallPlan, any_set, get_leaf
from rl_core.envs._plans import PlannedEnv, active_plan
from rl_core.envs.trajectory_writer import TrajectoryWriter
from rl_core.keys import DONE, NEXT, TRUNCATED


class RolloutEnv(PlannedEnv, Protocol):
    """What the rollout loop reads of an env (``EnvBase`` has it all): its public stepping
    API, its done layout and, for its step plan, what :class:`PlannedEnv` names."""

    @property
    def batch_size(self) -> torch.Size: ...

    @property
    def device(self) -> torch.device | None: ...

    def reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase: ...

    def step(self, tensordict: TensorDictBase) -> TensorDictBase: ...

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]: ...

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase: ...

    def step_mdp_plan(self) -> Callable[[TensorDictBase], TensorDictBase]: ...

    def done_levels(self) -> list[tuple[str, ...]]: ...

    def done_paths(self) -> list[tuple[tuple[str, ...], tuple[str, ...]]]: ...


def _done_per_sub_env(td: TensorDictBase, done_paths: list[tuple[str, ...]]) -> torch.Tensor:
    """One flag per sub-env (shape ``env.batch_size``): any done flag of it is set."""
    flags = None
    batch_ndim = td.batch_dims
    for path in done_paths:
        value = get_leaf(td, path)
        value = value.reshape(*value.shape[:batch_ndim], -1).any(-1)
        flags = value if flags is None else flags | value
    return flags


def _any_done(td: TensorDictBase, done_paths: list[tuple[str, ...]]) -> bool:
    return any(any_set(get_leaf(td, path)) for path in done_paths)


def rollout(
    env: RolloutEnv,
    max_steps: int,
    policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
    callback: Callable[[RolloutEnv, TensorDictBase], Any] | None = None,
    *,
    auto_reset: bool = True,
    auto_cast_to_device: bool = False,
    break_when_any_done: bool = True,
    break_when_all_done: bool = False,
    return_contiguous: bool = True,
    tensordict: TensorDictBase | None = None,
    set_truncated: bool = False,
) -> TensorDictBase:
    """Runs ``policy`` in ``env`` for up to ``max_steps`` steps and returns the trajectory.

    The output, shaped ``[*env.batch_size, T]``, is allocated on the first step and filled in
    place. Stopping rules: with ``break_when_any_done`` (the default) the rollout stops after
    the first step at which any sub-env is done. Otherwise finished sub-envs are reset (not
    after the last step: the env stays as it ended) and the rollout goes on; with
    ``break_when_all_done`` it stops once every sub-env has finished an episode.

    Args:
        env: the environment.
        max_steps: the most steps to take (>= 1).
        policy: reads the root TensorDict and writes the action(s); ``None`` takes random
            actions from the action spec (through the env's step plan,
            ``StepPlan.random_rollout``, when it has one: a loop without a TensorDict per step).
        callback: called as ``callback(env, transition)`` after each step.
        auto_reset: reset the env first; else ``tensordict`` is the starting point.
        auto_cast_to_device: move data to the policy's device (its first parameter's) before
            calling it and back to the env device after.
        break_when_any_done: stop when any sub-env is done.
        break_when_all_done: stop once every sub-env has finished an episode.
        return_contiguous: stack heterogeneous steps into a contiguous TensorDict when possible
            (a lazy stack otherwise).
        tensordict: the starting TensorDict when ``auto_reset`` is False; with ``auto_reset``,
            it is passed to ``reset`` (reset arguments, carried entries).
        set_truncated: mark the last step ``truncated`` (and ``done``) when the rollout stops on
            ``max_steps``; ``terminated`` is untouched.

    Returns:
        The trajectory: a TensorDict of batch size ``[*env.batch_size, T]``, ``T <= max_steps``.

    Raises:
        ValueError: ``max_steps`` < 1, or neither ``auto_reset`` nor ``tensordict``.
    """
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise ValueError(
            f"{type(env).__name__}.rollout: expected max_steps >= 1, got {max_steps!r}."
        )
    if auto_reset:
        td = env.reset(tensordict)
    elif tensordict is None:
        raise ValueError(
            f"{type(env).__name__}.rollout: with auto_reset=False, pass the starting TensorDict "
            f"as tensordict=...; got none."
        )
    else:
        td = tensordict
    if policy is None:
        plan = active_plan(env) if callback is None else None
        if plan is not None:
            out = plan.random_rollout(
                td,
                max_steps,
                break_when_any_done=break_when_any_done,
                break_when_all_done=break_when_all_done,
            )
            if out is not None:
                if set_truncated:
                    _mark_last_truncated(env, out)
                return out
        policy = env.rand_action
    policy_device = _policy_device(policy) if auto_cast_to_device else None
    env_device = env.device
    # `step` completes the flags, so `done` (one per level) says it all.
    done_paths = [(NEXT, *done_path) for done_path, _ in env.done_paths()]
    mdp_plan = env.step_mdp_plan()
    writer = TrajectoryWriter(max_steps)
    ever_done: torch.Tensor | None = None
    call = PolicyCallPlan(policy)  # policy(td), with the plain TensorDict-module calls resolved
    for i in range(max_steps):
        if policy_device is not None:
            td = policy(td.to(policy_device, non_blocking=True))
            if env_device is not None:
                td = td.to(env_device, non_blocking=True)
        else:  # an out-of-place policy's output joins its input, as TorchRL's update does
            td = td if (out := call(td)) is td else td.update(out)
        if break_when_any_done or i == max_steps - 1:  # no reset after the last step
            td = env.step(td)
            next_root = None
        else:
            td, next_root = env.step_and_maybe_reset(td)
        writer.append(td)
        if callback is not None:
            callback(env, td)
        if break_when_any_done:
            if _any_done(td, done_paths):
                break
            td = mdp_plan(td)
        else:
            if break_when_all_done:
                done = _done_per_sub_env(td, done_paths)
                ever_done = done if ever_done is None else ever_done | done
                if bool(ever_done.all()):
                    break
            td = next_root
    out = writer.result(return_contiguous=return_contiguous)
    if set_truncated:
        _mark_last_truncated(env, out)
    return out


def _mark_last_truncated(env: RolloutEnv, out: TensorDictBase) -> None:
    """Sub-envs not done at the last step are cut there: truncated (and done) become True."""
    last = (slice(None),) * len(env.batch_size) + (-1,)
    for level in env.done_levels():
        done_key, trunc_key = (NEXT, *level, DONE), (NEXT, *level, TRUNCATED)
        done, truncated = out.get(done_key).clone(), out.get(trunc_key).clone()
        cut = ~done[last]
        truncated[last] |= cut
        done[last] |= cut
        out.set(done_key, done)
        out.set(trunc_key, truncated)


def _policy_device(policy: Callable) -> torch.device | None:
    parameters = getattr(policy, "parameters", None)
    if parameters is None:
        return None
    for parameter in parameters():
        return parameter.device
    return None
