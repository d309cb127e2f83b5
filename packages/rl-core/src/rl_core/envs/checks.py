"""``check_env_specs``: a short rollout checked against the env's own specs (the per-step
debug checks are ``_spec_checks``')."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from rl_core.envs._spec_checks import _check_against
from rl_core.keys import NEXT
from rl_core.specs import Composite

if TYPE_CHECKING:
    from rl_core.envs.base import EnvBase


def check_env_specs(
    env: EnvBase,
    return_contiguous: bool = True,
    check_dtype: bool = True,
    seed: int | None = None,
    *,
    max_steps: int = 3,
) -> None:
    """Runs a short random rollout and checks every entry against the env's specs.

    The rollout must hold exactly the entries the specs describe (observations, actions,
    states and done flags at the root; observations, reward and done flags under ``"next"``),
    with the spec's shape, dtype and device, and values inside the spec.

    Args:
        env: the env to check.
        return_contiguous: passed to ``rollout``.
        check_dtype: also compare dtypes and bounds.
        seed: seed the env first.
        max_steps: length of the rollout (it does not stop on done).

    Raises:
        ValueError: the first mismatch: key, expected and actual shape/dtype/device.
    """
    if seed is not None:
        env.set_seed(seed)
    name = type(env).__name__
    rollout = env.rollout(max_steps, return_contiguous=return_contiguous, break_when_any_done=False)
    fake = env.fake_tensordict()
    fake_keys = set(fake.keys(include_nested=True, leaves_only=True))
    real_keys = set(rollout.keys(include_nested=True, leaves_only=True))
    if fake_keys != real_keys:
        missing = sorted(map(str, fake_keys - real_keys))
        extra = sorted(map(str, real_keys - fake_keys))
        raise ValueError(
            f"check_env_specs({name}): the rollout and the specs hold different entries. "
            f"In the specs, not in the rollout: {missing}. In the rollout, not in the specs: "
            f"{extra}. Add the missing entries to the env output or the extra ones to its specs."
        )
    time_dim = len(env.batch_size)
    for t, step in enumerate(rollout.unbind(time_dim)):
        where = f"check_env_specs({name}) at step {t}"
        root = Composite(env.full_observation_spec.clone(), shape=env.batch_size, device=env.device)
        root.update(env.full_done_spec)
        root.update(env.full_state_spec)
        root.update(env.full_action_spec)
        _check_against(where, root, step, check_dtype=check_dtype)
        nxt = Composite(env.full_observation_spec.clone(), shape=env.batch_size, device=env.device)
        nxt.update(env.full_reward_spec)
        nxt.update(env.full_done_spec)
        _check_against(where, nxt, step, prefix=(NEXT,), check_dtype=check_dtype)
        done = step.get((NEXT, "done"), None)
        if done is not None:
            expected = step.get((NEXT, "terminated")) | step.get((NEXT, "truncated"))
            if not torch.equal(done, expected):
                raise ValueError(f"{where}: 'done' differs from 'terminated | truncated'.")


__all__ = ["check_env_specs"]
