"""PendulumEnv: the gymnasium Pendulum-v1 swing-up task as a batched, stateless torch env."""

from __future__ import annotations

import math

import torch
from tensordict import TensorDictBase

from rl_core._accel.td_access import build_tensordict
from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, OBSERVATION, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Bounded, Composite, Unbounded

# State entries: the pendulum angle (0 is upright) and its angular velocity.
TH = "th"
THDOT = "thdot"

# Pendulum-v1 constants.
MAX_SPEED = 8.0
MAX_TORQUE = 2.0
DT = 0.05
MASS = 1.0
LENGTH = 1.0


def angle_normalize(theta: torch.Tensor) -> torch.Tensor:
    """Maps angles to ``[-pi, pi)`` (any shape).

    Examples:
        >>> import math, torch
        >>> angle_normalize(torch.tensor([0.5, 3 * math.pi / 2], dtype=torch.float64)).tolist()
        [0.5, -1.5707963267948966]
    """
    return torch.remainder(theta + math.pi, 2 * math.pi) - math.pi


def pendulum_step(
    th: torch.Tensor, thdot: torch.Tensor, torque: torch.Tensor, g: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One Euler step of the pendulum.

    The torque is clipped to ``[-2, 2]``; the angular velocity is updated first and clipped
    to ``[-8, 8]``, then the angle moves by the new velocity (semi-implicit Euler, ``dt`` 0.05).

    Args:
        th: angles, any shape ``S``.
        thdot: angular velocities, shape ``S``.
        torque: torques, shape ``S``.
        g: gravity.

    Returns:
        ``(new_th, new_thdot, reward)``, each of shape ``S``; the reward is
        ``-(angle_normalize(th)**2 + 0.1 * thdot**2 + 0.001 * torque**2)`` of the state before
        the step.

    Examples:
        >>> import torch
        >>> th, thdot, reward = pendulum_step(torch.zeros(1), torch.zeros(1), torch.ones(1), 10.0)
        >>> round(thdot.item(), 4), round(th.item(), 4), round(reward.item(), 4)
        (0.15, 0.0075, -0.001)
    """
    u = torque.clamp(-MAX_TORQUE, MAX_TORQUE)
    cost = angle_normalize(th).square() + 0.1 * thdot.square() + 0.001 * u.square()
    accel = 3 * g / (2 * LENGTH) * torch.sin(th) + 3.0 / (MASS * LENGTH**2) * u
    new_thdot = (thdot + accel * DT).clamp(-MAX_SPEED, MAX_SPEED)
    new_th = th + new_thdot * DT
    return new_th, new_thdot, -cost


class PendulumEnv(EnvBase):
    """The Pendulum-v1 swing-up task, batched and stateless, on any device.

    The state (``"th"``, the angle with 0 upright, and ``"thdot"``, each ``(*batch, 1)``) travels
    in the TensorDict: ``_step`` reads it from the input, so a state can be set by hand
    (``td["th"] = ...``) and partial resets touch nothing but the sub-envs reset. The
    ``"observation"`` is gymnasium's ``[cos(th), sin(th), thdot]`` (float32), the action a
    torque in ``[-2, 2]`` of shape ``(*batch, 1)``. Dynamics, reward and reset distribution
    (``th`` uniform in ``[-pi, pi]``, ``thdot`` in ``[-1, 1]``) are those of gymnasium's
    Pendulum-v1. The task never terminates; gymnasium's 200-step limit is not part of the env:
    add it with ``TransformedEnv(env, StepCounter(max_steps=200))``.

    Args:
        g: gravity. Defaults to 10.0 (as in Pendulum-v1).
        batch_size: the batch shape (any number of dims).
        device: where tensors live.
        dtype: dtype of the state entries; ``torch.float64`` follows gymnasium (which keeps its
            state in float64) to rounding, the default float32 is faster.

    Examples:
        >>> import torch
        >>> from rl_envs.native import PendulumEnv
        >>> env = PendulumEnv(batch_size=[4])
        >>> env.set_seed(0)
        1
        >>> traj = env.rollout(10)
        >>> traj.batch_size
        torch.Size([4, 10])
        >>> traj["next", "observation"].shape
        torch.Size([4, 10, 3])
        >>> bool((traj["next", "reward"] <= 0).all())
        True
    """

    def __init__(
        self,
        g: float = 10.0,
        *,
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
        device: torch.device | str | int | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        if not dtype.is_floating_point:
            raise TypeError(f"PendulumEnv: expected a floating dtype for the state, got {dtype}.")
        super().__init__(batch_size=batch_size, device=device)
        self.g = float(g)
        self.state_dtype = dtype
        batch = tuple(self.batch_size)
        flag_shape = (*batch, 1)
        dev = self.device
        state = Composite(
            {
                TH: Unbounded(shape=flag_shape, device=dev, dtype=dtype),
                THDOT: Bounded(-MAX_SPEED, MAX_SPEED, shape=flag_shape, device=dev, dtype=dtype),
            },
            shape=batch,
            device=dev,
        )
        observation = state.clone()
        observation[OBSERVATION] = Bounded(
            torch.tensor([-1.0, -1.0, -MAX_SPEED]).expand(*batch, 3),
            torch.tensor([1.0, 1.0, MAX_SPEED]).expand(*batch, 3),
            shape=(*batch, 3),
            device=dev,
        )
        self.observation_spec = observation
        self.state_spec = state
        self.action_spec = Bounded(-MAX_TORQUE, MAX_TORQUE, shape=flag_shape, device=dev)
        self.reward_spec = Unbounded(shape=flag_shape, device=dev)
        self.__dict__["_generator"] = torch.Generator(device=dev or "cpu")

    def _outputs(self, th: torch.Tensor, thdot: torch.Tensor) -> dict[str, torch.Tensor]:
        obs = torch.cat([torch.cos(th), torch.sin(th), thdot], dim=-1).to(torch.float32)
        return {OBSERVATION: obs, TH: th, THDOT: thdot}

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        shape = (*self.batch_size, 1)
        rand = torch.rand(
            (2, *shape), generator=self._generator, device=self.device, dtype=torch.float64
        )
        th = ((rand[0] * 2 - 1) * math.pi).to(self.state_dtype)
        thdot = (rand[1] * 2 - 1).to(self.state_dtype)
        return build_tensordict(self._outputs(th, thdot), self.batch_size, self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        th = tensordict.get(TH, None)
        thdot = tensordict.get(THDOT, None)
        if th is None or thdot is None:
            raise KeyError(
                f"PendulumEnv.step: expected the state entries {TH!r} and {THDOT!r} in the "
                f"TensorDict, got keys {sorted(map(str, tensordict.keys()))}. They come from "
                f"reset(); keep them in the TensorDict passed to step."
            )
        torque = tensordict.get(ACTION).to(self.state_dtype)
        new_th, new_thdot, reward = pendulum_step(th, thdot, torque, self.g)
        flags = torch.zeros(reward.shape, dtype=torch.bool, device=reward.device)
        out = self._outputs(new_th, new_thdot)
        out[REWARD] = reward.to(torch.float32)
        out[DONE] = flags
        out[TERMINATED] = flags.clone()
        out[TRUNCATED] = flags.clone()
        return build_tensordict(out, self.batch_size, self.device)

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self._generator.manual_seed(seed)


__all__ = ["PendulumEnv", "angle_normalize", "pendulum_step"]
