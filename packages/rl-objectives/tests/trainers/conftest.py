"""Small real parts for the trainer tests: a collector over CountingEnv, a TD(0) loss, a buffer.

The real collectors, buffers and losses live in sibling packages (or on another branch); these
stand-ins follow the same duck-typed contracts the trainer relies on.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.keys import ACTION, NEXT, OBSERVATION, REWARD, TERMINATED, NestedKey
from rl_core.objectives import LossModule
from rl_core.testing import CountingEnv


def random_policy(td: TensorDictBase) -> TensorDictBase:
    """Actions 0/1 drawn from torch's global generator (so the trainer's RNG state matters)."""
    return td.set(ACTION, torch.randint(0, 2, td.get(OBSERVATION).shape))


class TinyCollector:
    """Yields ``[*env.batch_size, frames_per_batch]`` batches; episodes run across batches.

    ``state_dict`` holds the next root TensorDict and the frame count, so a restored collector
    continues mid-episode exactly where the saved one was.
    """

    def __init__(self, env, policy, frames_per_batch: int, total_frames: int | None = None):
        self.env = env
        self.policy = policy
        self.frames_per_batch = frames_per_batch
        self.total_frames = total_frames
        self.frames = 0
        self.carry: TensorDictBase | None = None
        self.weight_updates = 0

    def __iter__(self):
        while self.total_frames is None or self.frames < self.total_frames:
            if self.carry is None:
                self.carry = self.env.reset()
            steps = []
            for _ in range(self.frames_per_batch):
                transition, self.carry = self.env.step_and_maybe_reset(self.policy(self.carry))
                steps.append(transition)
            batch = torch.stack(steps, dim=-1)
            self.frames += batch.numel()
            yield batch

    def update_policy_weights_(self) -> None:
        self.weight_updates += 1

    def state_dict(self) -> dict:
        carry = None if self.carry is None else self.carry.clone()
        return {"carry": carry, "frames": self.frames}

    def load_state_dict(self, state: dict) -> None:
        self.carry = None if state["carry"] is None else state["carry"].clone()
        self.frames = state["frames"]


class TinyBuffer:
    """A list-backed replay buffer; samples with torch's global generator."""

    def __init__(self):
        self.storage: list[TensorDictBase] = []

    def extend(self, batch: TensorDictBase) -> None:
        self.storage.extend(batch.unbind(0))

    def sample(self, batch_size: int) -> TensorDictBase:
        index = torch.randint(0, len(self.storage), (batch_size,))
        return torch.stack([self.storage[i] for i in index.tolist()])

    def state_dict(self) -> dict:
        return {"storage": torch.stack(self.storage).clone() if self.storage else None}

    def load_state_dict(self, state: dict) -> None:
        self.storage = [] if state["storage"] is None else list(state["storage"].unbind(0))


class TDZeroLoss(LossModule):
    """Regresses V(s) on the TD(0) target r + gamma * (1 - terminated) * V_target(s')."""

    @dataclass
    class _AcceptedKeys:
        observation: NestedKey = OBSERVATION
        reward: NestedKey = (NEXT, REWARD)
        terminated: NestedKey = (NEXT, TERMINATED)

    def __init__(self, value_network: torch.nn.Module, gamma: float = 0.9):
        super().__init__()
        self.convert_to_functional(value_network, "value_network", create_target_params=True)
        self.gamma = gamma

    def forward(self, td: TensorDictBase) -> TensorDictBase:
        keys = self.tensor_keys
        with self.use_network("value_network") as net:
            value = net(td.get(keys.observation))
        with torch.no_grad(), self.use_network("value_network", target=True) as net:
            next_value = net(td.get((NEXT, OBSERVATION)))
        not_terminated = (~td.get(keys.terminated)).to(value.dtype)
        target = td.get(keys.reward) + self.gamma * not_terminated * next_value
        return TensorDict(
            loss_value=(value - target).pow(2).mean(), value_mean=value.mean().detach()
        )


def value_network(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


@pytest.fixture
def tiny() -> SimpleNamespace:
    """The stand-ins, as a namespace of classes and factories."""
    return SimpleNamespace(
        Collector=TinyCollector,
        Buffer=TinyBuffer,
        Loss=TDZeroLoss,
        value_network=value_network,
        random_policy=random_policy,
        env=lambda: CountingEnv(max_count=6, batch_size=[2]),
    )
