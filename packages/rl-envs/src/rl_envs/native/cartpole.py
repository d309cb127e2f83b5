"""CartPoleEnv: gymnasium's CartPole-v1 as a batched torch env for GPU-resident pipelines."""

from __future__ import annotations

import math

import torch
from tensordict import TensorDictBase

from rl_core._accel.td_access import build_tensordict
from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, OBSERVATION, RESET, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Categorical, OneHot, Unbounded

# CartPole-v1 constants.
GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_CART + MASS_POLE
HALF_LENGTH = 0.5
POLE_MASS_LENGTH = MASS_POLE * HALF_LENGTH
FORCE_MAG = 10.0
TAU = 0.02
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4
RESET_BOUND = 0.05


def cartpole_step(state: torch.Tensor, push_right: torch.Tensor) -> torch.Tensor:
    """One explicit-Euler step of the cart-pole dynamics.

    Args:
        state: ``(..., 4)``: cart position, cart velocity, pole angle, pole angular velocity.
        push_right: ``(...)`` bool: push the cart right (force +10) or left (-10).

    Returns:
        The next state, ``(..., 4)``, same dtype as ``state``.

    Examples:
        >>> import torch
        >>> nxt = cartpole_step(torch.zeros(2, 4), torch.tensor([True, False]))
        >>> [round(v, 4) for v in nxt[:, 1].tolist()]  # cart velocities after one push
        [0.1951, -0.1951]
    """
    x, x_dot, theta, theta_dot = state.unbind(-1)
    force = torch.where(push_right, FORCE_MAG, -FORCE_MAG).to(state.dtype)
    cos, sin = torch.cos(theta), torch.sin(theta)
    temp = (force + POLE_MASS_LENGTH * theta_dot.square() * sin) / TOTAL_MASS
    theta_acc = (GRAVITY * sin - cos * temp) / (
        HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos.square() / TOTAL_MASS)
    )
    x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
    return torch.stack(
        [
            x + TAU * x_dot,
            x_dot + TAU * x_acc,
            theta + TAU * theta_dot,
            theta_dot + TAU * theta_acc,
        ],
        dim=-1,
    )


def cartpole_terminated(state: torch.Tensor) -> torch.Tensor:
    """``(..., 4) -> (..., 1)`` bool: the cart left ``[-2.4, 2.4]`` or the pole passed 12 degrees.

    Examples:
        >>> import torch
        >>> cartpole_terminated(torch.tensor([[2.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0]])).flatten().tolist()
        [True, False]
    """
    x, theta = state[..., 0:1], state[..., 2:3]
    return (x.abs() > X_THRESHOLD) | (theta.abs() > THETA_THRESHOLD)


class CartPoleEnv(EnvBase):
    """The CartPole-v1 balancing task, batched in torch (any batch shape, any device).

    Each sub-env holds the state ``[x, x_dot, theta, theta_dot]``; the ``"observation"`` is that
    state in float32. The action pushes the cart left (0) or right (1): a ``OneHot(2)`` of shape
    ``(*batch, 2)`` by default, a ``Categorical(2)`` of shape ``batch`` with
    ``categorical_action_encoding=True`` (the same specs ``GymEnv("CartPole-v1")`` uses).
    Dynamics (explicit Euler, ``tau`` 0.02), the reset distribution (uniform in
    ``[-0.05, 0.05]``), the reward (1 every step, the terminal one included) and termination
    (``|x| > 2.4`` or ``|theta| > 12°``) follow gymnasium's CartPole-v1; ``truncated`` is set
    after ``max_episode_steps`` steps (500, as ``gymnasium.make("CartPole-v1")`` does). Stepping
    a sub-env after it terminated, without a reset, is undefined (gymnasium warns) and simply
    continues the dynamics here.

    Args:
        batch_size: the batch shape.
        device: where the state and every output live.
        max_episode_steps: truncate episodes after this many steps; ``None`` never truncates.
        categorical_action_encoding: a ``Categorical(2)`` action instead of ``OneHot(2)``.
        dtype: dtype of the internal state. ``torch.float64`` follows gymnasium (float64
            state) to rounding; the default float32 is faster, especially on GPUs.

    Raises:
        ValueError: ``max_episode_steps`` is not a positive int or ``None``.

    Examples:
        >>> import torch
        >>> from rl_envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[16])
        >>> env.set_seed(0)
        1
        >>> traj = env.rollout(1000, break_when_any_done=False)
        >>> traj.batch_size
        torch.Size([16, 1000])
        >>> bool(traj["next", "done"].any()), traj["next", "reward"].unique().tolist()
        (True, [1.0])
    """

    def __init__(
        self,
        *,
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
        device: torch.device | str | int | None = None,
        max_episode_steps: int | None = 500,
        categorical_action_encoding: bool = False,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        if max_episode_steps is not None and (
            not isinstance(max_episode_steps, int)
            or isinstance(max_episode_steps, bool)
            or max_episode_steps < 1
        ):
            raise ValueError(
                f"CartPoleEnv: expected max_episode_steps >= 1 or None, got {max_episode_steps!r}."
            )
        if not dtype.is_floating_point:
            raise TypeError(f"CartPoleEnv: expected a floating dtype for the state, got {dtype}.")
        super().__init__(batch_size=batch_size, device=device)
        self.max_episode_steps = max_episode_steps
        self.categorical_action_encoding = categorical_action_encoding
        self.state_dtype = dtype
        batch = tuple(self.batch_size)
        dev = self.device
        self.observation_spec = Unbounded(shape=(*batch, 4), device=dev)
        if categorical_action_encoding:
            self.action_spec = Categorical(2, shape=batch, device=dev)
        else:
            self.action_spec = OneHot(2, shape=(*batch, 2), device=dev)
        self.reward_spec = Unbounded(shape=(*batch, 1), device=dev)
        state_device = dev or torch.device("cpu")
        self.__dict__["_generator"] = torch.Generator(device=state_device)
        self.__dict__["_state"] = torch.zeros((*batch, 4), dtype=dtype, device=state_device)
        self.__dict__["_steps"] = torch.zeros((*batch, 1), dtype=torch.int64, device=state_device)
        self.__dict__["_reward"] = torch.ones((*batch, 1), device=state_device)

    @property
    def state(self) -> torch.Tensor:
        """The state of every sub-env, ``(*batch, 4)``: x, x_dot, theta, theta_dot (a copy)."""
        return self._state.clone()

    def set_state(self, state: torch.Tensor) -> None:
        """Overwrites the state of every sub-env (for tests and planning).

        Raises:
            ValueError: ``state`` is not of shape ``(*batch, 4)``.
        """
        expected = (*self.batch_size, 4)
        if tuple(state.shape) != expected:
            raise ValueError(
                f"CartPoleEnv.set_state: expected shape {expected}, got {tuple(state.shape)}."
            )
        self.__dict__["_state"] = state.to(self._state.device, self.state_dtype).clone()

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        shape = self._state.shape
        fresh = torch.rand(shape, generator=self._generator, device=self._state.device)
        fresh = ((fresh * 2 - 1) * RESET_BOUND).to(self.state_dtype)
        mask = None if tensordict is None else tensordict.get(RESET, None)
        if mask is None:
            state, steps = fresh, torch.zeros_like(self._steps)
        else:
            state = torch.where(mask, fresh, self._state)
            steps = self._steps.masked_fill(mask, 0)
        self.__dict__["_state"] = state
        self.__dict__["_steps"] = steps
        return build_tensordict(
            {OBSERVATION: state.to(torch.float32, copy=True)}, self.batch_size, self.device
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(ACTION)
        push_right = action.bool() if self.categorical_action_encoding else action[..., 1].bool()
        state = cartpole_step(self._state, push_right)
        terminated = cartpole_terminated(state)
        steps = self._steps + 1
        if self.max_episode_steps is None:
            truncated = torch.zeros_like(terminated)
        else:
            truncated = steps >= self.max_episode_steps
        self.__dict__["_state"] = state
        self.__dict__["_steps"] = steps
        return build_tensordict(
            {
                OBSERVATION: state.to(torch.float32, copy=True),
                REWARD: self._reward.clone(),
                DONE: terminated | truncated,
                TERMINATED: terminated,
                TRUNCATED: truncated,
            },
            self.batch_size,
            self.device,
        )

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self._generator.manual_seed(seed)


__all__ = ["CartPoleEnv", "cartpole_step", "cartpole_terminated"]
