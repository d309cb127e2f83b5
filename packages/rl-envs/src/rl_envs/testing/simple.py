"""Small envs for users' tests of batched envs, collectors and transforms, as TorchRL's
``torchrl.testing.mocking_classes`` has them: a step counter, a batched counter with a
per-element limit, and an env that does nothing."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import Binary, Bounded, Categorical, Composite, EnvBase, TensorSpec, Unbounded
from rl_core.keys import ACTION, DONE, OBSERVATION, REWARD, TERMINATED
from rl_envs.testing.counting import _reset_rows


class MockBatchedLockedEnv(EnvBase):
    """An env whose observation and reward are a counter that goes up by 1 at every step,
    whatever the action; done once the counter reaches ``max(c + 100, 2 c)`` where ``c`` is
    the counter at the last reset.

    ``set_seed(seed)`` (``seed >= 1``) sets the counter to ``seed % 17``; a reset does not
    change it.

    Args:
        device: where the tensors live (default the CPU).
        batch_size: the env batch shape.
        observation_spec, action_spec, reward_spec, done_spec: replace the default specs
            (``(*batch_size, 1)`` each).

    Examples:
        >>> from rl_envs.testing import MockBatchedLockedEnv
        >>> env = MockBatchedLockedEnv(batch_size=[2])
        >>> _ = env.set_seed(18)
        >>> env.rollout(3)["next", "observation"][0].squeeze(-1).tolist()
        [2.0, 3.0, 4.0]
    """

    def __init__(
        self,
        device: torch.device | str | None = "cpu",
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
        *,
        observation_spec: Composite | None = None,
        action_spec: TensorSpec | None = None,
        reward_spec: TensorSpec | None = None,
        done_spec: TensorSpec | None = None,
    ) -> None:
        super().__init__(device=device, batch_size=batch_size)
        shape, d = (*self.batch_size, 1), self.device
        if observation_spec is None:
            observation_spec = Composite(
                {OBSERVATION: Unbounded(shape, device=d)}, shape=self.batch_size, device=d
            )
        self.observation_spec = observation_spec
        self.action_spec = Unbounded(shape, device=d) if action_spec is None else action_spec
        self.reward_spec = Unbounded(shape, device=d) if reward_spec is None else reward_spec
        if done_spec is None:
            done_spec = Categorical(2, shape=shape, dtype=torch.bool, device=d)
        self.done_spec = done_spec
        self.counter = 0
        self.max_val = 100

    def _set_seed(self, seed: int | None) -> None:
        if seed is None:
            return
        if seed < 1:
            raise ValueError(f"{type(self).__name__}.set_seed: expected a seed >= 1, got {seed}.")
        self.seed = seed
        self.counter = seed % 17
        self.max_val = max(self.counter + 100, self.counter * 2)

    def _counter_td(self, **extra: torch.Tensor) -> TensorDictBase:
        obs_shape = self.full_observation_spec[OBSERVATION].shape
        value = torch.full(obs_shape, float(self.counter), device=self.device)
        done = torch.full(
            (*self.batch_size, 1),
            self.counter >= self.max_val,
            dtype=torch.bool,
            device=self.device,
        )
        return TensorDict(
            {OBSERVATION: value, DONE: done, TERMINATED: done.clone(), **extra},
            batch_size=self.batch_size,
            device=self.device,
        )

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        self.max_val = max(self.counter + 100, self.counter * 2)
        return self._counter_td()

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.counter += 1
        reward_shape = self.full_reward_spec[self.reward_key].shape
        reward = torch.full(reward_shape, float(self.counter), device=self.device)
        return self._counter_td(**{REWARD: reward})

    def rand_step(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """A step (the action is not read, so none is drawn)."""
        if tensordict is None:
            tensordict = self.reset()
        return self.step(tensordict.set(ACTION, self.action_spec.zero()))


class MockSerialEnv(MockBatchedLockedEnv):
    """:class:`MockBatchedLockedEnv` with no batch dims.

    Args:
        device: where the tensors live (default the CPU).
    """

    def __init__(self, device: torch.device | str | None = "cpu", **spec_kwargs) -> None:
        super().__init__(device=device, **spec_kwargs)


class CountingBatchedEnv(EnvBase):
    """A batched counting env whose elements have their own ``max_steps`` and start value.

    The action (0 or 1) is added to each element's count; an element is done once its count
    is above its ``max_steps``; the reward is 0.

    Args:
        max_steps: the limits, one per batch element (shape ``batch_size``); default 5 for an
            env with no batch dims.
        start_val: the counts after a reset, one per element or a single value.
        **kwargs: :class:`rl_core.EnvBase`'s arguments.

    Raises:
        ValueError: when ``max_steps``' shape is not the batch size.

    Examples:
        >>> import torch
        >>> from rl_envs.testing import CountingBatchedEnv
        >>> env = CountingBatchedEnv(max_steps=torch.tensor([1, 3]), batch_size=[2])
        >>> traj = env.rollout(4, lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int8)), break_when_any_done=False)
        >>> traj["next", "done"].squeeze(-1).tolist()
        [[False, True, False, True], [False, False, False, True]]
    """

    def __init__(
        self,
        max_steps: torch.Tensor | None = None,
        start_val: torch.Tensor | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        max_steps = torch.tensor(5) if max_steps is None else torch.as_tensor(max_steps)
        if max_steps.shape != self.batch_size:
            raise ValueError(
                f"CountingBatchedEnv: expected max_steps of shape batch_size "
                f"{tuple(self.batch_size)}, got shape {tuple(max_steps.shape)}."
            )
        start_val = torch.zeros((), dtype=torch.int32) if start_val is None else start_val
        shape, d = (*self.batch_size, 1), self.device
        self.max_steps = max_steps
        self.start_val = torch.as_tensor(start_val).to(torch.int32).reshape(-1, 1)
        self.start_val = self.start_val.expand(self.batch_size.numel(), 1).reshape(shape)
        self.observation_spec = Composite(
            {OBSERVATION: Unbounded(shape, dtype=torch.int32, device=d)},
            shape=self.batch_size,
            device=d,
        )
        self.reward_spec = Unbounded(shape, device=d)
        self.done_spec = Categorical(2, shape=shape, dtype=torch.bool, device=d)
        self.action_spec = Binary(n=1, shape=shape, device=d)
        self.register_buffer("count", self.start_val.clone().to(d))

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            torch.manual_seed(seed)

    def _out(self, **extra: torch.Tensor) -> TensorDictBase:
        over = self.count > self.max_steps.reshape(self.count.shape).to(self.count.device)
        return TensorDict(
            {OBSERVATION: self.count.clone(), DONE: over, TERMINATED: over.clone(), **extra},
            batch_size=self.batch_size,
            device=self.device,
        )

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        rows = _reset_rows(self, tensordict)
        start = self.start_val.to(self.count.device)
        if rows is None:
            self.count.copy_(start)
        else:
            self.count[rows] = start[rows]
        return self._out()

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.count += tensordict.get(ACTION).to(torch.int32).reshape(self.count.shape)
        return self._out(**{REWARD: torch.zeros(self.count.shape, device=self.count.device)})


class EnvThatDoesNothing(EnvBase):
    """An env with no observation and no action: a reset returns nothing, a step only the
    zero reward and done flags (the rl-core contract needs done flags from a step; TorchRL's
    step returns an empty TensorDict).

    Examples:
        >>> from rl_envs.testing import EnvThatDoesNothing
        >>> EnvThatDoesNothing().rollout(3).batch_size
        torch.Size([3])
    """

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        return TensorDict(batch_size=self.batch_size, device=self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = self.full_done_spec.zero()
        out.update(self.full_reward_spec.zero())
        return out

    def _set_seed(self, seed: int | None) -> None:
        return None


class EnvWithScalarAction(EnvBase):
    """An env whose action is a scalar in ``[-1, 1]`` per batch element (shape
    ``batch_size``), or with ``singleton=True`` shaped ``(*batch_size, 1)``; observations
    ``(3,)`` drawn from a standard normal, reward 0, never done.

    Args:
        singleton: a trailing dim of 1 on the action.
        **kwargs: :class:`rl_core.EnvBase`'s arguments.

    Examples:
        >>> from rl_envs.testing import EnvWithScalarAction
        >>> EnvWithScalarAction(batch_size=[2]).action_spec.shape
        torch.Size([2])
    """

    def __init__(self, singleton: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.singleton = singleton
        batch, d = tuple(self.batch_size), self.device
        action_shape = (*batch, 1) if singleton else batch
        self.action_spec = Bounded(-1.0, 1.0, shape=action_shape, device=d)
        self.observation_spec = Composite(
            {OBSERVATION: Unbounded((*batch, 3), device=d)}, shape=batch, device=d
        )
        self.reward_spec = Unbounded((*batch, 1), device=d)

    def _observe(self, **extra: torch.Tensor) -> TensorDictBase:
        obs = torch.randn(*self.batch_size, 3, device=self.device)
        out = self.full_done_spec.zero()
        out.update({OBSERVATION: obs, **extra})
        return out

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        return self._observe()

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._observe(**{REWARD: torch.zeros(*self.batch_size, 1, device=self.device)})

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            torch.manual_seed(seed)


__all__ = [
    "CountingBatchedEnv",
    "EnvThatDoesNothing",
    "EnvWithScalarAction",
    "MockBatchedLockedEnv",
    "MockSerialEnv",
]
