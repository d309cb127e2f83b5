"""HumanoidEnv: TorchRL's humanoid locomotion task on gymnasium's Humanoid model."""

from __future__ import annotations

from typing import ClassVar

import torch

from rl_envs.libs._mujoco_locomotion import LocomotionEnvBase


class HumanoidEnv(LocomotionEnvBase):
    """A 3D humanoid (a free torso, 17 actuators in ``[-0.4, 0.4]``) rewarded for walking
    along ``+x``.

    The model is gymnasium's ``humanoid.xml`` (``Humanoid-v4``'s: timestep 0.003 s, 5 physics
    steps per action, ``dt`` 0.015 s). TorchRL's task, not ``Humanoid-v4``'s: the
    ``"observation"`` is ``cat(qpos[2:], clamp(qvel, -10, 10))`` (45 entries; gymnasium adds
    the bodies' inertias, velocities and forces), and the reward is ``(x' - x) / dt + 5
    (while healthy) - 0.1 * sum(action ** 2)`` with ``x = qpos[0]``, the torso's position
    (gymnasium's velocity is the centre of mass's); the episode terminates when the torso's
    height ``qpos[2]`` leaves ``[1.0, 2.0]``. Initial positions and velocities get uniform
    noise in ``[-0.01, 0.01]``.

    Keyword Args: see :class:`~rl_envs.MujocoEnv` (``xml_path`` replaces gymnasium's model).

    Raises:
        ImportError: mujoco or gymnasium is not installed (``pip install "rl-envs[mujoco]"``).

    Examples:
        >>> env = HumanoidEnv(num_envs=2, seed=0)
        >>> env.rollout(3)["next", "observation"].shape
        torch.Size([2, 3, 45])
    """

    MODEL_FILE: ClassVar[str] = "humanoid.xml"
    FRAME_SKIP: ClassVar[int] = 5
    SKIP_QPOS: ClassVar[int] = 2
    HEALTHY_Z_RANGE: ClassVar[tuple[float, float]] = (1.0, 2.0)
    HEALTHY_REWARD: ClassVar[float] = 5.0
    CTRL_COST_WEIGHT: ClassVar[float] = 0.1
    CLAMP_QVEL: ClassVar[float | None] = 10.0

    def _is_healthy(self, qpos: torch.Tensor) -> torch.Tensor:
        low, high = self.HEALTHY_Z_RANGE
        z = qpos[..., 2]
        return (z >= low) & (z <= high)


__all__ = ["HumanoidEnv"]
