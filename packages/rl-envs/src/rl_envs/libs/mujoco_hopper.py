"""HopperEnv: TorchRL's one-legged hopping task on gymnasium's Hopper model."""

from __future__ import annotations

from typing import ClassVar

import torch

from rl_envs.libs._mujoco_locomotion import LocomotionEnvBase


class HopperEnv(LocomotionEnvBase):
    """A planar one-legged hopper (3 hinge actuators in ``[-1, 1]``) rewarded for hopping
    along ``+x``.

    The model is gymnasium's ``hopper.xml`` (``Hopper-v4``: timestep 0.002 s, 4 physics steps
    per action, ``dt`` 0.008 s). The ``"observation"`` is ``cat(qpos[1:], clamp(qvel, -10,
    10))`` (11 entries, as ``Hopper-v4``); the reward is ``(x' - x) / dt + 1 (while healthy)
    - 0.001 * sum(action ** 2)`` with ``x = qpos[0]``; the episode terminates when the
    torso's height ``qpos[1]`` drops below 0.7 or its angle ``qpos[2]`` leaves
    ``[-0.2, 0.2]``. Initial positions and velocities get uniform noise in
    ``[-0.01, 0.01]``.

    Keyword Args: see :class:`~rl_envs.MujocoEnv` (``xml_path`` replaces gymnasium's model).

    Raises:
        ImportError: mujoco or gymnasium is not installed (``pip install "rl-envs[mujoco]"``).

    Examples:
        >>> env = HopperEnv(num_envs=2, seed=0)
        >>> env.rollout(3)["next", "observation"].shape
        torch.Size([2, 3, 11])
    """

    MODEL_FILE: ClassVar[str] = "hopper.xml"
    FRAME_SKIP: ClassVar[int] = 4
    SKIP_QPOS: ClassVar[int] = 1
    HEALTHY_Z_MIN: ClassVar[float] = 0.7
    HEALTHY_ANGLE_MAX: ClassVar[float] = 0.2
    HEALTHY_REWARD: ClassVar[float] = 1.0
    CTRL_COST_WEIGHT: ClassVar[float] = 1e-3
    CLAMP_QVEL: ClassVar[float | None] = 10.0

    def _is_healthy(self, qpos: torch.Tensor) -> torch.Tensor:
        return (qpos[..., 1] >= self.HEALTHY_Z_MIN) & (qpos[..., 2].abs() <= self.HEALTHY_ANGLE_MAX)


__all__ = ["HopperEnv"]
