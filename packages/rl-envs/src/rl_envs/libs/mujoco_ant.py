"""AntEnv: TorchRL's quadruped locomotion task on gymnasium's Ant model."""

from __future__ import annotations

from typing import ClassVar

import torch

from rl_envs.libs._mujoco_locomotion import LocomotionEnvBase


class AntEnv(LocomotionEnvBase):
    """A four-legged ant (a free torso, 8 hinge actuators in ``[-1, 1]``) rewarded for running
    along ``+x``.

    The model is gymnasium's ``ant.xml`` (``Ant-v4``: timestep 0.01 s, 5 physics steps per
    action, ``dt`` 0.05 s). The ``"observation"`` is ``cat(qpos[2:], qvel)`` (27 entries, as
    ``Ant-v4`` without contact forces); the reward is ``(x' - x) / dt + 1 (while healthy) -
    0.5 * sum(action ** 2)`` with ``x = qpos[0]``, the torso's position; the episode
    terminates when the torso's height ``qpos[2]`` leaves ``[0.2, 1.0]``. Initial positions
    and velocities get uniform noise in ``[-0.1, 0.1]``.

    Keyword Args: see :class:`~rl_envs.MujocoEnv` (``xml_path`` replaces gymnasium's model).

    Raises:
        ImportError: mujoco or gymnasium is not installed (``pip install "rl-envs[mujoco]"``).

    Examples:
        >>> env = AntEnv(num_envs=2, seed=0)
        >>> env.rollout(3)["next", "observation"].shape
        torch.Size([2, 3, 27])
    """

    MODEL_FILE: ClassVar[str] = "ant.xml"
    FRAME_SKIP: ClassVar[int] = 5
    RESET_NOISE_SCALE: ClassVar[float] = 0.1
    SKIP_QPOS: ClassVar[int] = 2
    HEALTHY_Z_RANGE: ClassVar[tuple[float, float]] = (0.2, 1.0)
    HEALTHY_REWARD: ClassVar[float] = 1.0
    CTRL_COST_WEIGHT: ClassVar[float] = 0.5

    def _is_healthy(self, qpos: torch.Tensor) -> torch.Tensor:
        low, high = self.HEALTHY_Z_RANGE
        z = qpos[..., 2]
        return (z >= low) & (z <= high)


__all__ = ["AntEnv"]
