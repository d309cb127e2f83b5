"""Shared checks for the library wrappers: SerialEnv and ParallelEnv of a wrapper."""

from __future__ import annotations

from collections.abc import Callable

import torch

from rl_core.envs import EnvBase, check_env_specs
from rl_envs import ParallelEnv, SerialEnv


def check_batched_rollouts(make_env: Callable[[], EnvBase], batched: type, steps: int = 4) -> None:
    """``batched(2, make_env)`` passes check_env_specs, and its seeded rollout gives every
    sub-env the trajectory the wrapper alone gives with seed ``seed + i`` and the same actions."""
    env = batched(2, make_env)
    try:
        check_env_specs(env)
        env.set_seed(11)
        traj = env.rollout(steps, break_when_any_done=False)
    finally:
        env.close()
    assert traj.batch_size[0] == 2
    assert traj.batch_size[-1] == steps
    for i in range(2):
        single = make_env()
        try:
            single.set_seed(11 + i)
            actions = traj[i].select(*single.action_keys)
            taken = iter(range(steps))

            def replay(td, actions=actions, taken=taken):
                return td.update(actions[..., next(taken)])

            ref = single.rollout(steps, replay, break_when_any_done=False)
        finally:
            single.close()
        for key in ref["next"].keys(include_nested=True, leaves_only=True):
            path = (key,) if isinstance(key, str) else key
            if "pixels" not in path:
                got, want = traj[i]["next", *path], ref["next", *path]
                torch.testing.assert_close(got, want, msg=f"sub-env {i}, {key!r}")


__all__ = ["ParallelEnv", "SerialEnv", "check_batched_rollouts"]
