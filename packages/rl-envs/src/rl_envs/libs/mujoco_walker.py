"""Walker2dEnv: TorchRL's planar biped task on gymnasium's Walker2d model."""

from __future__ import annotations

from typing import ClassVar

import torch

from rl_envs.libs._mujoco_locomotion import LocomotionEnvBase


class Walker2dEnv(LocomotionEnvBase):
    """A planar two-legged walker (6 hinge actuators in ``[-1, 1]``) rewarded for walking
    along ``+x``.

    The model is gymnasium's ``walker2d.xml`` (``Walker2d-v4``: timestep 0.002 s, 4 physics
    steps per action, ``dt`` 0.008 s). The ``"observation"`` is ``cat(qpos[1:], clamp(qvel,
    -10, 10))`` (17 entries, as ``Walker2d-v4``); the reward is ``(x' - x) / dt + 1 (while
    healthy) - 0.001 * sum(action ** 2)`` with ``x = qpos[0]``; the episode terminates when
    the torso's height ``qpos[1]`` leaves ``[0.8, 2.0]`` or its angle ``qpos[2]`` leaves
    ``[-1, 1]``. Initial positions and velocities get uniform noise in ``[-0.01, 0.01]``.

    Keyword Args: see :class:`~rl_envs.MujocoEnv` (``xml_path`` replaces gymnasium's model).

    Raises:
        ImportError: mujoco or gymnasium is not installed (``pip install "rl-envs[mujoco]"``).

    Examples:
        >>> env = Walker2dEnv(num_envs=2, seed=0)
        >>> env.rollout(3)["next", "observation"].shape
        torch.Size([2, 3, 17])
    """

    MODEL_FILE: ClassVar[str] = "walker2d.xml"
    FRAME_SKIP: ClassVar[int] = 4
    SKIP_QPOS: ClassVar[int] = 1
    HEALTHY_Z_RANGE: ClassVar[tuple[float, float]] = (0.8, 2.0)
    HEALTHY_ANGLE_MAX: ClassVar[float] = 1.0
    HEALTHY_REWARD: ClassVar[float] = 1.0
    CTRL_COST_WEIGHT: ClassVar[float] = 1e-3
    CLAMP_QVEL: ClassVar[float | None] = 10.0

    def _is_healthy(self, qpos: torch.Tensor) -> torch.Tensor:
        low, high = self.HEALTHY_Z_RANGE
        z = qpos[..., 1]
        return (z >= low) & (z <= high) & (qpos[..., 2].abs() <= self.HEALTHY_ANGLE_MAX)


__all__ = ["Walker2dEnv"]
