"""PointMassEnv: an example MujocoEnv task (a point mass pushed to the origin)."""

from __future__ import annotations

from typing import ClassVar

import torch
from tensordict import TensorDictBase

from rl_envs.libs.mujoco import QPOS, MujocoEnv

_POINT_MASS = """
<mujoco model="point_mass">
  <option timestep="0.02"/>
  <worldbody>
    <light name="top" pos="0 0 1" dir="0 0 -1"/>
    <camera name="top" pos="0 0 0.9"/>
    <geom name="floor" type="plane" pos="0 0 -0.03" size="0.35 0.35 0.01" rgba="0.2 0.3 0.4 1"
          contype="0" conaffinity="0"/>
    <geom name="target" type="sphere" pos="0 0 0" size="0.02" rgba="0.9 0.2 0.2 1" contype="0"
          conaffinity="0"/>
    <body name="mass">
      <joint name="x" type="slide" axis="1 0 0" damping="0.5" limited="true" range="-0.3 0.3"/>
      <joint name="y" type="slide" axis="0 1 0" damping="0.5" limited="true" range="-0.3 0.3"/>
      <geom name="mass" type="sphere" size="0.02" mass="0.3" rgba="0.9 0.9 0.9 1" contype="0"
            conaffinity="0"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="x" ctrllimited="true" ctrlrange="-1 1"/>
    <motor joint="y" ctrllimited="true" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""


class PointMassEnv(MujocoEnv):
    """An example :class:`MujocoEnv` task: push a point mass on a plane to the origin.

    Two damped slide joints (``x``, ``y`` in ``[-0.3, 0.3]`` m) driven by two motors with
    controls in ``[-1, 1]``. The ``"observation"`` is ``[x, y, vx, vy]``; the reward of a step
    is ``-||(x, y)||`` after it (0 at the target); the task never terminates (episodes are
    truncated after ``max_episode_steps``). Initial positions are uniform in
    ``[-0.25, 0.25]`` (``RESET_NOISE_SCALE``), velocities too are drawn in that range.
    Its camera ``"top"`` looks down on the plane (the red target, the white mass) for
    ``from_pixels``.

    Keyword Args: see :class:`MujocoEnv` (``FRAME_SKIP`` is 2: 0.04 s per step).

    Examples:
        >>> env = PointMassEnv()
        >>> env.action_spec.low.tolist(), env.action_spec.high.tolist()
        ([[-1.0, -1.0]], [[1.0, 1.0]])
    """

    XML: ClassVar[str | None] = _POINT_MASS
    FRAME_SKIP: ClassVar[int] = 2
    RESET_NOISE_SCALE: ClassVar[float] = 0.25

    def _compute_reward(
        self, state: TensorDictBase, action: torch.Tensor, next_state: TensorDictBase
    ) -> torch.Tensor:
        return -next_state[QPOS].norm(dim=-1, keepdim=True)

    def _compute_done(self, state: TensorDictBase, next_state: TensorDictBase) -> torch.Tensor:
        return torch.zeros(self.num_envs, 1, dtype=torch.bool)


__all__ = ["PointMassEnv"]
