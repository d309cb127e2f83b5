"""A ParallelEnv worker's direct path for gymnasium envs: shared buffers in, shared buffers out.

A worker holding a ``GymEnv``/``GymWrapper`` (or a ``SerialEnv`` whose gymnasium sub-envs step
together through one vector env) spends most of a step building TensorDicts that only carry
numbers from one shared buffer to another. :class:`GymDirectStep` instead hands the action in
the shared input buffer to gymnasium and writes gymnasium's outputs straight into the shared
output buffers with numpy, and, in a fused step, resets the finished sub-envs the way
``EnvBase.step_and_maybe_reset`` does (``reset_mask`` for a vector env, a full reset for a
single one). The outputs are those of the generic path, value for value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, OBSERVATION, REWARD, TERMINATED, TRUNCATED
from rl_envs.libs.gym import runs_own_steps

_STEP_ENTRIES = {(OBSERVATION,), (REWARD,), (DONE,), (TERMINATED,), (TRUNCATED,)}
_RESET_ENTRIES = {(OBSERVATION,), (DONE,), (TERMINATED,), (TRUNCATED,)}


def gym_wrapper_of(env: EnvBase) -> Any:
    """The ``GymWrapper`` that steps ``env`` with no TensorDict work around it, or ``None``.

    That is ``env`` itself (a ``GymWrapper`` whose step and reset are the wrapper's own) or the
    vector group of a ``SerialEnv`` of gymnasium sub-envs on the same device.
    """
    from rl_envs.batched.serial import SerialEnv

    if type(env) is SerialEnv:
        group = env._group
        if group is None or env.device != env.sub_device:
            return None
        env = group
    return env if runs_own_steps(env) else None


class GymDirectStep:
    """Steps one gymnasium env between a worker's rows of the shared buffers.

    Built by :meth:`build` where it applies: one ``Box``/``MultiBinary`` observation, one
    action entry, the reward and the three done flags at the root, no pixels, no info
    readers, not gymnasium's ``SAME_STEP`` autoreset mode, outputs on the CPU.

    Args:
        wrapper: the ``GymWrapper``.
        leaves: the worker's rows of the shared buffers, by buffer name and entry path.
    """

    def __init__(self, wrapper: Any, leaves: dict[str, dict[tuple[str, ...], torch.Tensor]]):
        from rl_envs.libs._gym_codecs import make_encoder

        self.wrapper = wrapper
        self.env = wrapper._env
        self.vector = bool(wrapper.batch_size)
        batch = tuple(wrapper.batch_size)
        self.encode = make_encoder(
            wrapper._space("action_space"), wrapper.action_spec, batch, who=wrapper.name
        )
        # numpy throughout: a torch call between two gymnasium steps is slow (cold code).
        self.action = leaves["sent"][(ACTION,)].numpy()
        step, reset = leaves["step_outputs"], leaves["reset_outputs"]
        # numpy views of the rows; reward and flags without their trailing singleton dim.
        self.obs = step[(OBSERVATION,)].numpy()
        self.reward, self.done, self.terminated, self.truncated = (
            step[(name,)].numpy().reshape(batch) for name in (REWARD, DONE, TERMINATED, TRUNCATED)
        )
        self.reset_obs = reset[(OBSERVATION,)].numpy()
        self.reset_flags = [reset[(name,)].numpy() for name in (DONE, TERMINATED, TRUNCATED)]

    @classmethod
    def build(
        cls, env: EnvBase, paths: dict[str, list[tuple[str, ...]]], leaves: dict[str, list[Any]]
    ) -> GymDirectStep | None:
        """The direct path for the worker env ``env``, or ``None`` where it does not apply.

        Args:
            env: the worker's env.
            paths: the entry paths of each shared buffer.
            leaves: the worker's rows of each shared buffer, in the order of ``paths``.
        """
        wrapper = gym_wrapper_of(env)
        if wrapper is None:
            return None
        from rl_envs.libs._gym_rollout import numpy_loop_applies

        if (
            not numpy_loop_applies(wrapper)
            or paths["sent"] != [(ACTION,)]
            or set(paths["step_outputs"]) != _STEP_ENTRIES
            or set(paths["reset_outputs"]) != _RESET_ENTRIES
        ):
            return None
        by_path = {name: dict(zip(paths[name], leaves[name])) for name in paths}
        batch = tuple(wrapper.batch_size)
        for name in (REWARD, DONE, TERMINATED, TRUNCATED):
            if tuple(by_path["step_outputs"][(name,)].shape) != (*batch, 1):
                return None
        try:
            return cls(wrapper, by_path)
        except (TypeError, ValueError):  # an action space without an encoder, odd layouts
            return None

    def usable(self) -> bool:
        """False when the wrapper has changed since (an info reader was added)."""
        return not self.wrapper._info_readers

    def step(self, *, reset: bool) -> bool:
        """Steps with the action in the shared input row; with ``reset``, resets finished envs.

        With ``reset``, the next root (reset observations where a sub-env finished) is written
        to the reset row.

        Returns:
            Whether a sub-env finished and was reset.
        """
        env = self.env
        obs, reward, terminated, truncated, _ = env.step(self.encode(self.action.copy()))
        self.obs[...] = obs
        self.reward[...] = reward
        self.terminated[...] = terminated
        self.truncated[...] = truncated
        done = np.logical_or(self.terminated, self.truncated, out=self.done)
        if not reset:
            return False
        # The next root goes to the reset row, whether or not a sub-env finished. Its done
        # flags are all False: those of sub-envs that did not finish, or of fresh episodes.
        if not done.any():
            self.reset_obs[...] = self.obs
            return False
        if self.vector:
            mask = done.copy()
            fresh = env.reset(seed=None, options={"reset_mask": mask})[0]
            self.reset_obs[...] = self.obs
            self.reset_obs[mask] = np.asarray(fresh)[mask]
        else:
            self.reset_obs[...] = env.reset(seed=None, options=None)[0]
        for flags in self.reset_flags:
            flags[...] = False
        return True


__all__ = ["GymDirectStep", "gym_wrapper_of"]
