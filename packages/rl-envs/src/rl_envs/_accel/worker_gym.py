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

import torch

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, OBSERVATION, REWARD, TERMINATED, TRUNCATED

_STEP_ENTRIES = {(OBSERVATION,), (REWARD,), (DONE,), (TERMINATED,), (TRUNCATED,)}
_RESET_ENTRIES = {(OBSERVATION,), (DONE,), (TERMINATED,), (TRUNCATED,)}


class GymDirectStep:
    """Steps one gymnasium env between a worker's rows of the shared buffers.

    Built by :meth:`build` where it applies: a stepper (one ``Box``/``MultiBinary``
    observation, one action space, no pixels, no info readers, not ``SAME_STEP``, outputs on
    the CPU, no override of the step or reset methods), one action entry, and the reward and
    the three done flags at the root.

    Args:
        env: the worker's env.
        stepper: its gymnasium stepper (a ``GymNumpyStepper``).
        leaves: the worker's rows of the shared buffers, by buffer name and entry path.
    """

    def __init__(
        self,
        env: EnvBase,
        stepper: Any,
        leaves: dict[str, dict[tuple[str, ...], torch.Tensor]],
    ) -> None:
        self.env = env
        self.stepper = stepper
        batch = tuple(env.batch_size)
        # numpy throughout: a torch call between two gymnasium steps is slow (cold code).
        self.action = leaves["sent"][(ACTION,)].numpy()
        step, reset = leaves["step_outputs"], leaves["reset_outputs"]
        # numpy views of the rows, with a leading dim of 1 (row 0 of blocks); reward and
        # flags without their trailing singleton dim.
        self.obs = step[(OBSERVATION,)].numpy()[None]
        reward, done, terminated, truncated = (
            step[(name,)].numpy().reshape(1, *batch)
            for name in (REWARD, DONE, TERMINATED, TRUNCATED)
        )
        self.blocks = (self.obs, reward, done, terminated, truncated)
        self.reset_obs = reset[(OBSERVATION,)].numpy()[None]
        self.reset_flags = [reset[(name,)].numpy() for name in (DONE, TERMINATED, TRUNCATED)]

    @classmethod
    def build(
        cls,
        env: EnvBase,
        stepper: Any,
        paths: dict[str, list[tuple[str, ...]]],
        leaves: dict[str, list[Any]],
    ) -> GymDirectStep | None:
        """The direct path for the worker env ``env``, or ``None`` where it does not apply.

        Args:
            env: the worker's env.
            stepper: the gymnasium stepper that steps ``env`` on numpy rows (see
                ``numpy_stepper``), or ``None`` (no direct path).
            paths: the entry paths of each shared buffer.
            leaves: the worker's rows of each shared buffer, in the order of ``paths``.
        """
        if (
            stepper is None
            or paths["sent"] != [(ACTION,)]
            or set(paths["step_outputs"]) != _STEP_ENTRIES
            or set(paths["reset_outputs"]) != _RESET_ENTRIES
        ):
            return None
        by_path = {name: dict(zip(paths[name], leaves[name])) for name in paths}
        batch = tuple(env.batch_size)
        for name in (REWARD, DONE, TERMINATED, TRUNCATED):
            if tuple(by_path["step_outputs"][(name,)].shape) != (*batch, 1):
                return None
        return cls(env, stepper, by_path)

    def usable(self) -> bool:
        """False when the env has changed since (an info reader was added)."""
        return not self.stepper.retired

    def step(self, *, reset: bool) -> bool:
        """Steps with the action in the shared input row; with ``reset``, resets finished envs.

        With ``reset``, the next root (reset observations where a sub-env finished) is written
        to the reset row.

        Returns:
            Whether a sub-env finished and was reset.
        """
        done = self.stepper.step_at(self.action.copy(), self.blocks, 0)
        if not reset:
            return False
        # The next root goes to the reset row, whether or not a sub-env finished. Its done
        # flags are all False: those of sub-envs that did not finish, or of fresh episodes.
        self.reset_obs[...] = self.obs
        if done is None:
            return False
        self.stepper.reset_finished_at(done, self.reset_obs, 0)
        for flags in self.reset_flags:
            flags[...] = False
        return True


__all__ = ["GymDirectStep"]
