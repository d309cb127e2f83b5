"""The shared part of the locomotion tasks (AntEnv, HopperEnv, HumanoidEnv, Walker2dEnv).

Each task is gymnasium's ``-v4`` model (the MJCF file gymnasium ships) with TorchRL's task
definition: the reward of a step is the forward velocity of the root (``qpos[0]``'s change over
``dt``) plus ``HEALTHY_REWARD`` while healthy minus ``CTRL_COST_WEIGHT * sum(action ** 2)``, and
the episode terminates when the body leaves its healthy range.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any, ClassVar

import torch
from tensordict import TensorDictBase

from rl_envs.libs.mujoco import _INSTALL, QPOS, QVEL, MujocoEnv


def gymnasium_mujoco_asset(file_name: str, who: str) -> Path:
    """The path of one of gymnasium's MuJoCo model files (``ant.xml``, ``hopper.xml``, ...).

    Raises:
        ImportError: gymnasium is not installed.
    """
    try:
        import gymnasium.envs.mujoco as gym_mujoco
    except ImportError as err:
        raise ImportError(
            f"{who} loads gymnasium's MuJoCo model {file_name!r}: {_INSTALL}"
        ) from err
    return Path(gym_mujoco.__file__).parent / "assets" / file_name


def forward_reward(
    qpos: torch.Tensor,
    next_qpos: torch.Tensor,
    action: torch.Tensor,
    healthy: torch.Tensor,
    *,
    dt: float,
    healthy_reward: float,
    ctrl_cost_weight: float,
) -> torch.Tensor:
    """The locomotion reward ``(qpos'[0] - qpos[0]) / dt + healthy_reward * healthy -
    ctrl_cost_weight * sum(action ** 2)``.

    Args:
        qpos: positions before the step, ``(..., nq)``.
        next_qpos: positions after it, ``(..., nq)``.
        action: the action, ``(..., nu)``.
        healthy: whether each body is healthy after the step, ``(...)`` bool.
        dt: seconds of simulated time per step.
        healthy_reward: reward of a healthy step.
        ctrl_cost_weight: weight of the squared action.

    Returns:
        The reward, ``(..., 1)`` in ``action``'s dtype.
    """
    velocity = (next_qpos[..., 0] - qpos[..., 0]) / dt
    ctrl_cost = ctrl_cost_weight * action.pow(2).sum(-1)
    reward = velocity.to(action.dtype) + healthy_reward * healthy.to(action.dtype) - ctrl_cost
    return reward.unsqueeze(-1)


class LocomotionEnvBase(MujocoEnv):
    """A gymnasium locomotion model with TorchRL's forward-velocity task (see the module).

    A subclass names ``MODEL_FILE`` (one of gymnasium's assets) and implements
    :meth:`_is_healthy`; ``CLAMP_QVEL`` clamps the velocities in the observation.
    """

    MODEL_FILE: ClassVar[str]
    HEALTHY_REWARD: ClassVar[float] = 1.0
    CTRL_COST_WEIGHT: ClassVar[float] = 1e-3
    CLAMP_QVEL: ClassVar[float | None] = None

    def _load_model(self, mujoco: Any, xml_path: str | Path | None, who: str) -> Any:
        if xml_path is None:
            xml_path = gymnasium_mujoco_asset(self.MODEL_FILE, who)
        return super()._load_model(mujoco, xml_path, who)

    @abc.abstractmethod
    def _is_healthy(self, qpos: torch.Tensor) -> torch.Tensor:
        """Whether each body is healthy, ``(num_envs,)`` bool, from its positions."""

    def _make_obs(self, state: TensorDictBase) -> torch.Tensor:
        qvel = state[QVEL]
        if self.CLAMP_QVEL is not None:
            qvel = qvel.clamp(-self.CLAMP_QVEL, self.CLAMP_QVEL)
        return torch.cat([state[QPOS][..., self.SKIP_QPOS :], qvel], dim=-1).to(self.dtype)

    def _compute_reward(
        self, state: TensorDictBase, action: torch.Tensor, next_state: TensorDictBase
    ) -> torch.Tensor:
        return forward_reward(
            state[QPOS],
            next_state[QPOS],
            action,
            self._is_healthy(next_state[QPOS]),
            dt=self.dt,
            healthy_reward=self.HEALTHY_REWARD,
            ctrl_cost_weight=self.CTRL_COST_WEIGHT,
        )

    def _compute_done(self, state: TensorDictBase, next_state: TensorDictBase) -> torch.Tensor:
        return (~self._is_healthy(next_state[QPOS])).unsqueeze(-1)
