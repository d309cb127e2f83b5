"""make_tensordict: a zeroed TensorDict holding every entry of one full step of an env."""

from __future__ import annotations

from collections.abc import Callable

import torch
from tensordict import TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION


def make_tensordict(
    env: EnvBase, policy: Callable[[TensorDictBase], TensorDictBase] | None = None
) -> TensorDictBase:
    """A TensorDict of zeros with the entries, shapes and dtypes of one full step of ``env``:
    what its reset gives, the action (from ``policy``, else drawn from the action spec), and
    the step's ``"next"`` entries. A template for buffers.

    The env is reset and stepped once (without gradients) to build it.

    Args:
        env: the env.
        policy: ``(tensordict) -> tensordict`` writing the action; ``None`` draws a random
            action from ``env.action_spec``.

    Returns:
        The zeroed TensorDict, of the env's batch size.

    Raises:
        TypeError: ``env`` is not an ``EnvBase``, or ``policy`` is not callable.

    Examples:
        >>> from rl_envs import PendulumEnv
        >>> td = make_tensordict(PendulumEnv())
        >>> td["next", "observation"].tolist(), td["action"].tolist()
        ([0.0, 0.0, 0.0], [0.0])
    """
    if not isinstance(env, EnvBase):
        raise TypeError(f"make_tensordict: expected an EnvBase as env, got {type(env).__name__}.")
    if policy is not None and not callable(policy):
        raise TypeError(
            f"make_tensordict: expected policy to be callable or None, got {type(policy).__name__}."
        )
    with torch.no_grad():
        tensordict = env.reset()
        if policy is not None:
            tensordict = policy(tensordict)
        else:
            tensordict.set(ACTION, env.action_spec.rand())
        tensordict = env.step(tensordict)
    return tensordict.zero_()


__all__ = ["make_tensordict"]
