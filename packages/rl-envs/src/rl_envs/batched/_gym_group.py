"""SerialEnv's fast path for gymnasium sub-envs: one SyncVectorEnv over their gymnasium envs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rl_core.envs import EnvBase
from rl_core.specs import Composite
from rl_envs.libs.gym import GymWrapper, runs_own_steps


def _same_env(env: Any) -> Any:
    return env


def gym_vector_group(envs: Sequence[EnvBase], reference: EnvBase) -> EnvBase | None:
    """One ``GymWrapper`` stepping the gymnasium envs of ``envs`` together, or ``None``.

    Applies when every sub-env is an unbatched ``GymWrapper`` (``GymEnv``) that steps as
    ``GymWrapper`` does (no override of its step or reset methods, see
    :func:`rl_envs.libs.gym.runs_own_steps`): their gymnasium envs
    (wrappers included) go into one ``gymnasium.vector.SyncVectorEnv`` with autoreset disabled,
    so a step converts the outputs of all sub-envs at once. The group is used only when its
    specs equal ``reference``'s (the batched env's); sub-envs reading ``info`` entries or
    rendering pixels keep the sub-env by sub-env path.

    Args:
        envs: the sub-envs.
        reference: the batched env whose specs the group must have.

    Returns:
        The group env (batch ``[len(envs)]``), or ``None``.
    """
    # Only sub-envs that step as GymWrapper does: a subclass overriding _step/_reset (reward
    # shaping, say) must run its override, which one vector env over the gymnasium envs skips.
    if not all(runs_own_steps(env) and not env.batch_size for env in envs):
        return None
    import gymnasium

    wrapper = GymWrapper

    try:
        vector = gymnasium.vector.SyncVectorEnv(
            [lambda env=env: _same_env(env.env) for env in envs],
            autoreset_mode=gymnasium.vector.AutoresetMode.DISABLED,
        )
    except (AssertionError, ValueError, TypeError, RuntimeError):
        return None  # spaces that differ, or envs gymnasium cannot vectorize
    for categorical in (False, True):
        try:
            group = wrapper(vector, categorical_action_encoding=categorical, device=envs[0].device)
        except (TypeError, ValueError):
            return None
        if _same_specs(group, reference):
            return group
    return None


def _same_specs(group: EnvBase, reference: EnvBase) -> bool:
    if tuple(group.batch_size) != tuple(reference.batch_size):
        return False
    pairs: list[tuple[Composite, Composite]] = [
        (group.full_observation_spec, reference.full_observation_spec),
        (group.full_action_spec, reference.full_action_spec),
        (group.full_reward_spec, reference.full_reward_spec),
        (group.full_done_spec, reference.full_done_spec),
        (group.full_state_spec, reference.full_state_spec),
    ]
    return all(mine.to("cpu") == theirs.to("cpu") for mine, theirs in pairs)


__all__ = ["gym_vector_group"]
