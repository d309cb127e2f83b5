"""SerialEnv's fast path for gymnasium sub-envs: one SyncVectorEnv over their gymnasium envs.

The vector group is one of SerialEnv's ways of stepping its sub-envs (the other, stepping them
one by one, is ``rl_envs.batched._serial_steps.SubEnvSteps``): :class:`GymGroupSteps` answers
the same calls. It reads the SerialEnv's devices through :class:`SerialDevices` and builds the
group's ``GymWrapper`` from the class ``rl_envs.libs.gym`` registered (``gym_parts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch
from tensordict import TensorDictBase

from rl_core.envs import EnvBase
from rl_core.specs import Composite
from rl_envs._accel.gym_parts import gym_parts, numpy_stepper, runs_own_steps


class SerialDevices(Protocol):
    """What the group reads of its SerialEnv's layout (``SerialLayout`` implements it)."""

    @property
    def device(self) -> torch.device | None: ...

    @property
    def sub_device(self) -> torch.device | None: ...

    def to_sub(self, tensordict: TensorDictBase) -> TensorDictBase: ...

    def to_self(self, tensordict: TensorDictBase) -> TensorDictBase: ...


def _same_env(env: Any) -> Any:
    return env


def gym_vector_group(envs: Sequence[EnvBase], reference: EnvBase) -> EnvBase | None:
    """One ``GymWrapper`` stepping the gymnasium envs of ``envs`` together, or ``None``.

    Applies when every sub-env is an unbatched ``GymWrapper`` (``GymEnv``) that steps as
    ``GymWrapper`` does (no override of its step or reset methods, see
    :func:`~rl_envs._accel.gym_parts.runs_own_steps`): their gymnasium envs
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
    parts = gym_parts()
    if parts is None or not all(runs_own_steps(env) and not env.batch_size for env in envs):
        return None
    import gymnasium

    wrapper = parts.wrapper

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


class GymGroupSteps:
    """Steps a SerialEnv's gymnasium sub-envs together, through their vector group.

    The group (see :func:`gym_vector_group`) is a ``GymWrapper`` over one ``SyncVectorEnv``
    of the sub-envs' gymnasium envs: its steps, resets (``reset_mask`` for partial ones),
    fused step-and-resets and random rollouts are the SerialEnv's, moved between the devices
    where the SerialEnv's device is not the sub-envs'.

    Args:
        envs: the sub-envs (their gymnasium envs are the group's).
        layout: the SerialEnv's batch size, devices and entry paths.
        group: the vector group.
    """

    vectorized = True

    def __init__(self, envs: Sequence[EnvBase], layout: SerialDevices, group: Any) -> None:
        self.envs = envs
        self.layout = layout
        self.group = group
        # The group's outputs are the SerialEnv's as they are: no device move.
        self.same_device = layout.device == layout.sub_device
        self.plan = group._make_step_plan()  # the group's routes on numpy rows

    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        layout = self.layout
        return layout.to_self(self.group._step(layout.to_sub(tensordict)))

    def reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        layout = self.layout
        sub = None if tensordict is None else layout.to_sub(tensordict)
        return layout.to_self(self.group._reset(sub, **kwargs))

    def step_and_maybe_reset(
        self, env: EnvBase, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        # One masked reset of the vector env (EnvBase's step then reset of the finished
        # sub-envs, or the fused hook below) beats resetting sub-envs one by one.
        return EnvBase.step_and_maybe_reset(env, tensordict)

    def step_and_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, Any] | None:
        # The group's own fused step-and-reset, where the outputs need no device move.
        return self.plan.step_and_reset(tensordict) if self.same_device else None

    def merge_reset_rows(self, next_root: TensorDictBase, pending: Any) -> TensorDictBase:
        return self.plan.merge_reset_rows(next_root, pending)

    def random_rollout(
        self, start: TensorDictBase, max_steps: int, **stop: bool
    ) -> TensorDictBase | None:
        out = self.plan.random_rollout(self.layout.to_sub(start), max_steps, **stop)
        return None if out is None else self.layout.to_self(out)

    def numpy_stepper(self) -> Any:
        # Paths stepping on numpy rows write the sub-envs' device's outputs.
        return numpy_stepper(self.group) if self.same_device else None


__all__ = ["GymGroupSteps", "SerialDevices", "gym_vector_group"]
