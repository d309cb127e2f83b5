"""Vector and image mock envs with discrete or continuous actions, as TorchRL's
``torchrl.testing.mocking_classes`` has them, and the policies that drive them.

The state is a vector of 7 values kept in the TensorDict under ``_out_key``
(``"observation_orig"`` or ``"pixels_orig"``) beside the observation ``out_key``; a step adds
``action / maxstep`` to it. An image env shows the vector as the diagonal of a
``(1, 7, 7)`` image.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase

from rl_core import Bounded, Categorical, Composite, EnvBase, OneHot, TensorSpec, Unbounded
from rl_core.keys import ACTION, DONE, REWARD, TERMINATED

_SIZE = 7


class _MockEnvBase(EnvBase):
    """The shared part: a counter drawn from the seed, ``maxstep``, the custom members
    batched-env tests read through workers, and the spec defaults."""

    out_key = "observation"
    _out_key = "observation_orig"
    size = _SIZE

    def __init__(
        self,
        *,
        observation_spec: Composite | None = None,
        action_spec: TensorSpec | None = None,
        reward_spec: TensorSpec | None = None,
        done_spec: TensorSpec | None = None,
        from_pixels: bool = False,
        seed: int = 100,
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
        device: torch.device | str | None = "cpu",
        allow_done_after_reset: bool = False,
    ) -> None:
        super().__init__(
            batch_size=batch_size, device=device, allow_done_after_reset=allow_done_after_reset
        )
        batch, d = tuple(self.batch_size), self.device
        self.from_pixels = from_pixels
        self.observation_spec = (
            observation_spec
            if observation_spec is not None
            else Composite(
                {
                    key: Unbounded((*batch, *self._obs_shape()), device=d)
                    for key in (self.out_key, self._out_key)
                },
                shape=batch,
                device=d,
            )
        )
        self.action_spec = action_spec if action_spec is not None else self._default_action()
        self.reward_spec = (
            reward_spec if reward_spec is not None else Unbounded((*batch, 1), device=d)
        )
        self.done_spec = (
            done_spec
            if done_spec is not None
            else Categorical(2, shape=(*batch, 1), dtype=torch.bool, device=d)
        )
        self.set_seed(seed)

    # subclasses say what the observation and the action look like
    def _obs_shape(self) -> tuple[int, ...]:
        return (self.size,)

    def _default_action(self) -> TensorSpec:
        raise NotImplementedError

    def _get_out_obs(self, state: torch.Tensor) -> torch.Tensor:
        """The observation showing the state vector ``(*batch, 7)``."""
        return state

    def _get_in_obs(self, obs: torch.Tensor) -> torch.Tensor:
        """The state vector an observation shows."""
        return obs

    @property
    def maxstep(self) -> int:
        """The action is divided by it before it is added to the state."""
        return 100

    def _set_seed(self, seed: int | None) -> None:
        self.seed = seed
        self.counter = 0 if seed is None else seed % 17

    def custom_fun(self) -> int:
        """A method batched-env tests call through their workers; returns 0."""
        return 0

    custom_attr = 1

    @property
    def custom_prop(self) -> int:
        """A property batched-env tests read through their workers; 2."""
        return 2

    @property
    def custom_td(self) -> TensorDict:
        """A TensorDict property batched-env tests read through their workers."""
        return TensorDict({"a": torch.zeros(3)}, [])

    def _write(self, state: torch.Tensor, **extra: torch.Tensor) -> TensorDictBase:
        obs = self._get_out_obs(state)
        return TensorDict(
            {self.out_key: obs, self._out_key: obs.clone(), **extra},
            batch_size=self.batch_size,
            device=self.device,
        )


class DiscreteActionVecMockEnv(_MockEnvBase):
    """A mock env with a vector observation ``(7,)`` and a one-hot action of 7 (or, with
    ``categorical_action_encoding=True``, a categorical one).

    Each reset adds 1 to a counter (first ``seed % 17``) and starts the state at the counter
    in every entry; a step adds ``action / 100`` to it. The reward is 1 when an entry of the
    state reaches ``counter + 1``, else 0; the env is never done.

    Args:
        observation_spec, action_spec, reward_spec, done_spec: replace the default specs.
        from_pixels: kept as an attribute.
        categorical_action_encoding: a categorical action instead of a one-hot one.
        seed: the seed set at construction (the first counter is ``seed % 17``).
        batch_size, device, allow_done_after_reset: :class:`rl_core.EnvBase`'s arguments
            (the device defaults to the CPU).

    Examples:
        >>> from rl_envs.testing import DiscreteActionVecMockEnv, DiscreteActionVecPolicy
        >>> env = DiscreteActionVecMockEnv()
        >>> traj = env.rollout(3, DiscreteActionVecPolicy())
        >>> traj["next", "observation"][-1].tolist()
        [16.0, 16.010000228881836, 16.020000457763672, 16.0, 16.0, 16.0, 16.0]
    """

    def __init__(self, *, categorical_action_encoding: bool = False, **kwargs) -> None:
        self.categorical_action_encoding = categorical_action_encoding
        super().__init__(**kwargs)

    def _default_action(self) -> TensorSpec:
        batch = tuple(self.batch_size)
        if self.categorical_action_encoding:
            return Categorical(_SIZE, shape=batch, device=self.device)
        return OneHot(_SIZE, shape=(*batch, _SIZE), device=self.device)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        self.counter += 1
        state = torch.full((*self.batch_size, self.size), float(self.counter), device=self.device)
        return self._write(state)

    def _action_vector(self, action: torch.Tensor) -> torch.Tensor:
        if self.categorical_action_encoding:
            return torch.nn.functional.one_hot(action.long(), self.size).to(torch.float32)
        if not bool((action.sum(-1) == 1).all()):
            raise ValueError(
                f"{type(self).__name__}.step: expected a one-hot action (one entry set per "
                f"row), got {action.tolist()}."
            )
        return action.to(torch.float32)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = self._action_vector(tensordict.get(ACTION))
        state = self._get_in_obs(tensordict.get(self._out_key)) + action / self.maxstep
        hit = torch.isclose(state, torch.full_like(state, float(self.counter + 1)))
        reward = hit.any(-1, keepdim=True).to(torch.get_default_dtype())
        done = torch.zeros(*self.batch_size, 1, dtype=torch.bool, device=self.device)
        return self._write(state, **{REWARD: reward, DONE: done, TERMINATED: done.clone()})


class ContinuousActionVecMockEnv(_MockEnvBase):
    """A mock env with a vector observation ``(7,)`` and an action in ``[-1, 1]^7``.

    A reset draws both observation entries from the observation spec; a step adds
    ``action / 100`` to the state. ``done``, ``terminated`` and the reward (1.0 or 0.0) are
    whether an entry of the state reaches ``counter + 1`` (with the default random start,
    practically never).

    Args:
        observation_spec, action_spec, reward_spec, done_spec: replace the default specs.
        from_pixels: kept as an attribute.
        seed: the seed set at construction.
        batch_size, device, allow_done_after_reset: :class:`rl_core.EnvBase`'s arguments.

    Examples:
        >>> from rl_envs.testing import ContinuousActionVecMockEnv
        >>> env = ContinuousActionVecMockEnv()
        >>> env.rollout(3)["next", "observation"].shape
        torch.Size([3, 7])
    """

    def _default_action(self) -> TensorSpec:
        return Bounded(-1.0, 1.0, shape=(*self.batch_size, _SIZE), device=self.device)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        self.counter += 1
        self.step_count = 0
        return self.observation_spec.rand()

    def _obs_step(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return state + action / self.maxstep

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.step_count += 1
        state = self._obs_step(
            self._get_in_obs(tensordict.get(self._out_key)), tensordict.get(ACTION)
        )
        hit = torch.isclose(state, torch.full_like(state, float(self.counter + 1)))
        while hit.dim() > len(self.batch_size):
            hit = hit.any(-1)
        hit = hit.unsqueeze(-1)
        reward_spec = self.full_reward_spec[self.reward_key]
        reward = hit.to(reward_spec.dtype).expand(reward_spec.shape).clone()
        return self._write(state, **{REWARD: reward, DONE: hit, TERMINATED: hit.clone()})


class DiscreteActionConvMockEnv(DiscreteActionVecMockEnv):
    """:class:`DiscreteActionVecMockEnv` with an image observation ``"pixels"`` of shape
    ``(1, 7, 7)``: the state vector on its diagonal, zeros elsewhere.

    Examples:
        >>> from rl_envs.testing import DiscreteActionConvMockEnv, DiscreteActionConvPolicy
        >>> env = DiscreteActionConvMockEnv()
        >>> env.rollout(3, DiscreteActionConvPolicy())["next", "pixels"].shape
        torch.Size([3, 1, 7, 7])
    """

    out_key = "pixels"
    _out_key = "pixels_orig"

    def __init__(self, *, from_pixels: bool = True, **kwargs) -> None:
        super().__init__(from_pixels=from_pixels, **kwargs)

    def _obs_shape(self) -> tuple[int, ...]:
        return (1, self.size, self.size)

    def _get_out_obs(self, state: torch.Tensor) -> torch.Tensor:
        return torch.diag_embed(state).unsqueeze(-3)

    def _get_in_obs(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.diagonal(0, -2, -1).squeeze(-2)


class ContinuousActionConvMockEnv(ContinuousActionVecMockEnv):
    """:class:`ContinuousActionVecMockEnv` with an image observation ``"pixels"`` (default
    shape ``(1, 7, 7)``); the state is the image's diagonal, the action a vector of the image
    width in ``[-1, 1]``.

    Args:
        pixel_shape: the image shape ``(channels, height, width)``, height equal to width.
        **kwargs: :class:`ContinuousActionVecMockEnv`'s arguments.

    Examples:
        >>> from rl_envs.testing import ContinuousActionConvMockEnv
        >>> env = ContinuousActionConvMockEnv()
        >>> env.rollout(3)["next", "pixels"].shape
        torch.Size([3, 1, 7, 7])
    """

    out_key = "pixels"
    _out_key = "pixels_orig"

    def __init__(
        self, *, pixel_shape: tuple[int, ...] | list[int] | None = None, from_pixels=True, **kwargs
    ) -> None:
        self.pixel_shape = tuple(pixel_shape) if pixel_shape is not None else (1, _SIZE, _SIZE)
        if len(self.pixel_shape) != 3 or self.pixel_shape[1] != self.pixel_shape[2]:
            raise ValueError(
                "ContinuousActionConvMockEnv: expected pixel_shape as (channels, side, side), "
                f"got {self.pixel_shape}."
            )
        super().__init__(from_pixels=from_pixels, **kwargs)

    def _obs_shape(self) -> tuple[int, ...]:
        return self.pixel_shape

    def _default_action(self) -> TensorSpec:
        shape = (*self.batch_size, self.pixel_shape[-1])
        return Bounded(-1.0, 1.0, shape=shape, device=self.device)

    def _get_out_obs(self, state: torch.Tensor) -> torch.Tensor:
        return torch.diag_embed(state)

    def _get_in_obs(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.diagonal(0, -2, -1)

    def _obs_step(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return state + action.unsqueeze(-2) / self.maxstep


class DiscreteActionConvMockEnvNumpy(DiscreteActionConvMockEnv):
    """:class:`DiscreteActionConvMockEnv` with channels-last pixels ``(7, 7, 3)``: the state on
    the diagonal of each of the 3 channels.

    Examples:
        >>> from rl_envs.testing import DiscreteActionConvMockEnvNumpy
        >>> DiscreteActionConvMockEnvNumpy().rollout(2)["next", "pixels"].shape
        torch.Size([2, 7, 7, 3])
    """

    def _obs_shape(self) -> tuple[int, ...]:
        return (self.size, self.size, 3)

    def _get_out_obs(self, state: torch.Tensor) -> torch.Tensor:
        image = torch.diag_embed(state).unsqueeze(-1)
        return image.expand(*image.shape[:-1], 3).clone()

    def _get_in_obs(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[..., 0].diagonal(0, -2, -1)


class ContinuousActionConvMockEnvNumpy(ContinuousActionConvMockEnv):
    """:class:`ContinuousActionConvMockEnv` with channels-last pixels ``(7, 7, 3)``.

    Examples:
        >>> from rl_envs.testing import ContinuousActionConvMockEnvNumpy
        >>> ContinuousActionConvMockEnvNumpy().rollout(2)["next", "pixels"].shape
        torch.Size([2, 7, 7, 3])
    """

    def _obs_shape(self) -> tuple[int, ...]:
        return (self.pixel_shape[-1], self.pixel_shape[-1], 3)

    def _get_out_obs(self, state: torch.Tensor) -> torch.Tensor:
        image = torch.diag_embed(state.squeeze(-2)).unsqueeze(-1)
        return image.expand(*image.shape[:-1], 3).clone()

    def _get_in_obs(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[..., 0].diagonal(0, -2, -1).unsqueeze(-2)


class DiscreteActionVecPolicy(TensorDictModuleBase):
    """A deterministic policy for :class:`DiscreteActionVecMockEnv`: the one-hot of the index
    after the first largest entry of the observation (wrapping around)."""

    def __init__(self) -> None:
        super().__init__()
        self.in_keys = ["observation"]
        self.out_keys = [ACTION]

    def _get_in_obs(self, tensordict: TensorDictBase) -> torch.Tensor:
        return tensordict.get(self.in_keys[0])

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        obs = self._get_in_obs(tensordict)
        first_max = obs.argmax(-1)  # torch.argmax returns the first largest entry
        width = obs.shape[-1]
        action = torch.nn.functional.one_hot((first_max + 1) % width, width)
        return tensordict.set(self.out_keys[0], action)


class DiscreteActionConvPolicy(DiscreteActionVecPolicy):
    """:class:`DiscreteActionVecPolicy` reading the diagonal of ``"pixels"``."""

    def __init__(self) -> None:
        super().__init__()
        self.in_keys = ["pixels"]

    def _get_in_obs(self, tensordict: TensorDictBase) -> torch.Tensor:
        return tensordict.get(self.in_keys[0]).diagonal(0, -2, -1).squeeze(-2)


__all__ = [
    "ContinuousActionConvMockEnv",
    "ContinuousActionConvMockEnvNumpy",
    "ContinuousActionVecMockEnv",
    "DiscreteActionConvMockEnv",
    "DiscreteActionConvMockEnvNumpy",
    "DiscreteActionConvPolicy",
    "DiscreteActionVecMockEnv",
    "DiscreteActionVecPolicy",
]
