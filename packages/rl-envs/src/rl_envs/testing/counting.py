"""Counting envs for users' tests, as TorchRL's ``torchrl.testing.mocking_classes`` has them.

Each env keeps its count in a buffer (module state, so ``env.to(device)`` moves it): the action
is added to the count, and an episode is done once the count is above ``max_steps``. With
actions of 1 an episode is ``max_steps + 1`` steps long.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import nn

from rl_core import Binary, Categorical, Composite, EnvBase, TensorSpec, Unbounded
from rl_core.keys import ACTION, DONE, OBSERVATION, REWARD, TERMINATED


def _reset_rows(env: EnvBase, tensordict: TensorDictBase | None) -> torch.Tensor | None:
    """Which batch elements of ``env`` a reset call resets: a bool tensor of shape
    ``env.batch_size`` from the ``"_reset"`` masks in ``tensordict`` (at any level; a nested
    mask counts for its batch element when any of its entries is set), or ``None`` for all."""
    if tensordict is None:
        return None
    n_batch = len(env.batch_size)
    rows = None
    for key in env.reset_keys:
        mask = tensordict.get(key, None)
        if mask is None:
            continue
        mask = mask.reshape(*env.batch_size, -1).any(-1) if n_batch else mask.any().reshape(())
        rows = mask if rows is None else rows | mask
    return rows


class CountingEnv(EnvBase):
    """An env that counts: the action (0 or 1) is added to the count, which is the observation.

    The count starts at ``start_val`` and the episode is done (``done`` and ``terminated``)
    when the count is above ``max_steps``; the reward is always 0. The count is env state (a
    buffer), so a partial reset (``"_reset"`` masks) resets only the masked batch elements.

    Args:
        max_steps: the episode is done once the count is above it.
        start_val: the count after a reset.
        **kwargs: :class:`rl_core.EnvBase`'s arguments (``batch_size``, ``device``,
            ``allow_done_after_reset``).

    Examples:
        >>> from rl_envs.testing import CountingEnv, CountingEnvCountPolicy
        >>> env = CountingEnv(max_steps=3)
        >>> policy = CountingEnvCountPolicy(env.action_spec, env.action_key)
        >>> traj = env.rollout(10, policy)
        >>> traj["next", "observation"].squeeze(-1).tolist()
        [1, 2, 3, 4]
    """

    def __init__(self, max_steps: int = 5, start_val: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.max_steps = max_steps
        self.start_val = start_val
        shape = (*self.batch_size, 1)
        self.observation_spec = Composite(
            {OBSERVATION: Unbounded(shape, dtype=torch.int32, device=self.device)},
            shape=self.batch_size,
            device=self.device,
        )
        self.reward_spec = Unbounded(shape, device=self.device)
        self.done_spec = Categorical(2, shape=shape, dtype=torch.bool, device=self.device)
        self.action_spec = Binary(n=1, shape=shape, device=self.device)
        self.register_buffer("count", torch.zeros(shape, dtype=torch.int32, device=self.device))

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            torch.manual_seed(seed)

    def _reset_count(self, tensordict: TensorDictBase | None) -> None:
        rows = _reset_rows(self, tensordict)
        if rows is None:
            self.count.fill_(self.start_val)
        else:
            self.count[rows] = self.start_val

    def _output(self, **extra: torch.Tensor) -> TensorDictBase:
        over = self.count > self.max_steps
        return TensorDict(
            {OBSERVATION: self.count.clone(), DONE: over, TERMINATED: over.clone(), **extra},
            batch_size=self.batch_size,
            device=self.device,
        )

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        self._reset_count(tensordict)
        return self._output()

    def _increment(self, tensordict: TensorDictBase) -> torch.Tensor:
        """What the step adds to the count: the action."""
        return tensordict.get(self.action_key).to(torch.int32).reshape(self.count.shape)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.count += self._increment(tensordict).to(self.count.device)
        reward_dtype = self.full_reward_spec[self.reward_key].dtype
        return self._output(**{REWARD: torch.zeros(self.count.shape, dtype=reward_dtype)})


class IncrementingEnv(CountingEnv):
    """A :class:`CountingEnv` whose count goes up by 1 at every step, whatever the action.

    Examples:
        >>> import torch
        >>> from rl_envs.testing import IncrementingEnv
        >>> env = IncrementingEnv(max_steps=2)
        >>> env.rollout(10)["next", "observation"].squeeze(-1).tolist()
        [1, 2, 3]
    """

    def _increment(self, tensordict: TensorDictBase) -> torch.Tensor:
        return torch.ones_like(self.count)


class CountingEnvCountPolicy(TensorDictModuleBase):
    """A policy that always writes 1 (the action spec's zero plus one) at ``action_key``.

    Args:
        action_spec: the action's leaf spec (not a Composite).
        action_key: where the action goes.

    Raises:
        TypeError: when ``action_spec`` is a Composite.
    """

    def __init__(self, action_spec: TensorSpec, action_key: NestedKey = ACTION) -> None:
        super().__init__()
        if isinstance(action_spec, Composite):
            raise TypeError(
                "CountingEnvCountPolicy: expected the action's leaf spec, got a Composite; "
                "pass env.full_action_spec[env.action_key]."
            )
        self.action_spec = action_spec
        self.action_key = action_key
        self.in_keys = []
        self.out_keys = [action_key]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict.set(self.action_key, self.action_spec.zero() + 1)


class CountingEnvCountModule(nn.Module):
    """A module returning the action spec's zero plus one, whatever its input.

    Args:
        action_spec: the action's spec.
    """

    def __init__(self, action_spec: TensorSpec) -> None:
        super().__init__()
        self.action_spec = action_spec

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.action_spec.zero() + 1


__all__ = [
    "CountingEnv",
    "CountingEnvCountModule",
    "CountingEnvCountPolicy",
    "IncrementingEnv",
]
