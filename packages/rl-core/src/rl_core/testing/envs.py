"""Small torch-native envs for tests, docs and the conformance kit."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, OBSERVATION, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Categorical, Composite, Unbounded


class CountingEnv(EnvBase):
    """Counts up: the observation is the count, the action (0 or 1) is added to it.

    The reward is 1 per step; an episode terminates when the count reaches ``max_count``.
    Stateless: the count travels in the TensorDict, so any batch size and partial resets
    work. The reset count is drawn from ``[0, start_high)``, from the env's own generator.

    Args:
        max_count: the count that ends an episode.
        start_high: reset counts are drawn in ``[0, start_high)``. Defaults to 1 (always 0).
        batch_size: the env batch shape.
        device: where tensors live.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> env = CountingEnv(max_count=3, batch_size=[2])
        >>> env.rollout(10, policy=lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int64))).batch_size
        torch.Size([2, 3])
    """

    def __init__(
        self,
        max_count: int = 5,
        start_high: int = 1,
        *,
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, device=device)
        self.max_count = max_count
        self.start_high = start_high
        shape = (*self.batch_size, 1)
        self.observation_spec = Composite(
            {OBSERVATION: Unbounded(shape=shape, device=self.device)},
            shape=self.batch_size,
            device=self.device,
        )
        self.action_spec = Categorical(2, shape=shape, device=self.device)
        self.reward_spec = Unbounded(shape=shape, device=self.device)
        self.__dict__["_generator"] = torch.Generator(device=self.device or "cpu")

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        shape = (*self.batch_size, 1)
        count = torch.randint(
            0, self.start_high, shape, generator=self._generator, device=self.device
        ).to(torch.float32)
        return TensorDict({OBSERVATION: count}, batch_size=self.batch_size, device=self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        count = tensordict.get(OBSERVATION) + tensordict.get(ACTION).to(torch.float32)
        terminated = count >= self.max_count
        return TensorDict(
            {
                OBSERVATION: count,
                REWARD: torch.ones_like(count),
                DONE: terminated,
                TERMINATED: terminated.clone(),
                TRUNCATED: torch.zeros_like(terminated),
            },
            batch_size=self.batch_size,
            device=self.device,
        )

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self._generator.manual_seed(seed)


__all__ = ["CountingEnv"]
