"""The plain references of the suite: what a user writes with gymnasium, numpy and torch alone.

No rl-* package is imported here, so the peer environment (``benchmarks/torchrl_reference``,
TorchRL over its own torch) times the same reference code next to TorchRL in its process. Each
function builds its objects, runs one block of work and returns seconds per unit (CPU time of
this process unless the docstring says wall clock).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch
from torch import nn

NUM_ENVS = 8
CHUNK = 256  # random actions drawn at once, as the envs' own random loops do
OBS, HIDDEN = 4, 64


def cartpole_random(steps: int) -> Callable[[], float]:
    """One CartPole, random actions drawn ``CHUNK`` at a time, reset at each episode's end:
    seconds per step."""
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    rng = env.action_space.np_random

    def run() -> float:
        actions = iter(())
        start = time.process_time()
        for _ in range(steps):
            action = next(actions, None)
            if action is None:
                actions = iter(rng.integers(0, 2, size=CHUNK))
                action = next(actions)
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        return (time.process_time() - start) / steps

    return run


def cartpole_fixed(steps: int) -> Callable[[], float]:
    """One CartPole stepping a fixed action (what a policy writing one action costs the plain
    loop): seconds per step."""
    env = gym.make("CartPole-v1")
    env.reset(seed=0)

    def run() -> float:
        start = time.process_time()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(1)
            if terminated or truncated:
                env.reset()
        return (time.process_time() - start) / steps

    return run


def cartpole_sampled(steps: int) -> Callable[[], float]:
    """One CartPole, one ``action_space.sample()`` per step, reset at each episode's end (the
    loop users write by hand, as gymnasium has it): seconds per step."""
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.action_space.seed(0)

    def run() -> float:
        space = env.action_space
        start = time.process_time()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(space.sample())
            if terminated or truncated:
                env.reset()
        return (time.process_time() - start) / steps

    return run


def cartpole_sample(steps: int) -> Callable[[], float]:
    """``action_space.sample()`` of CartPole alone: seconds per call."""
    space = gym.make("CartPole-v1").action_space
    space.seed(0)

    def run() -> float:
        start = time.process_time()
        for _ in range(steps):
            space.sample()
        return (time.process_time() - start) / steps

    return run


def cartpole_policy_loop(
    steps: int, act: Callable[[torch.Tensor], np.ndarray]
) -> Callable[[], float]:
    """One CartPole driven by ``act`` under ``no_grad``, reset at each episode's end: seconds
    per step (the single-env policy loop's reference)."""
    env = gym.make("CartPole-v1")
    state = {"obs": env.reset(seed=0)[0]}

    def run() -> float:
        obs = state["obs"]
        start = time.process_time()
        with torch.no_grad():
            for _ in range(steps):
                action = act(torch.as_tensor(obs, dtype=torch.float32))
                obs, _, terminated, truncated, _ = env.step(action.item())
                if terminated or truncated:
                    obs, _ = env.reset()
        state["obs"] = obs
        return (time.process_time() - start) / steps

    return run


def vector_random(steps: int, *, asynchronous: bool = False) -> Callable[[], float]:
    """``SyncVectorEnv`` (or ``AsyncVectorEnv``: wall clock) of 8 CartPoles, random actions
    drawn ``CHUNK`` steps at a time: seconds per vector step."""
    kind = gym.vector.AsyncVectorEnv if asynchronous else gym.vector.SyncVectorEnv
    env = kind([lambda: gym.make("CartPole-v1") for _ in range(NUM_ENVS)])
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    clock = time.perf_counter if asynchronous else time.process_time

    def run() -> float:
        chunk = rng.integers(0, 2, size=(CHUNK, NUM_ENVS))
        start = clock()
        for t in range(steps):
            if t % CHUNK == 0:
                chunk = rng.integers(0, 2, size=(CHUNK, NUM_ENVS))
            env.step(chunk[t % CHUNK])
        return (clock() - start) / steps

    run.close = env.close  # type: ignore[attr-defined]
    return run


def mlp(n_in: int, n_out: int) -> nn.Sequential:
    """The policy network of the collector workloads: two hidden layers of 64, Tanh."""
    return nn.Sequential(
        nn.Linear(n_in, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
        nn.Linear(HIDDEN, n_out),
    )  # fmt: skip


def categorical_action(net: nn.Module) -> Callable[[torch.Tensor], np.ndarray]:
    """CartPole: logits, ``Categorical.sample``."""

    def act(obs: torch.Tensor) -> np.ndarray:
        return torch.distributions.Categorical(logits=net(obs)).sample().numpy()

    return act


def tanh_normal_action(net: nn.Module, high: float) -> Callable[[torch.Tensor], np.ndarray]:
    """Pendulum: loc and softplus scale, a Normal sample squashed by tanh into the bounds."""

    def act(obs: torch.Tensor) -> np.ndarray:
        loc, scale = net(obs).chunk(2, -1)
        scale = nn.functional.softplus(scale) + 1e-4
        return (torch.distributions.Normal(loc, scale).sample().tanh() * high).numpy()

    return act


def vector_policy_loop(
    env_id: str, frames: int, act: Callable[[torch.Tensor], np.ndarray]
) -> Callable[[], float]:
    """``SyncVectorEnv`` of 8 ``env_id`` envs driven by ``act`` under ``no_grad``: seconds per
    frame (the collector workloads' reference)."""
    env = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(NUM_ENVS)])
    state = {"obs": env.reset(seed=0)[0]}

    def run() -> float:
        obs = state["obs"]
        start = time.process_time()
        with torch.no_grad():
            for _ in range(frames // NUM_ENVS):
                action = act(torch.as_tensor(obs, dtype=torch.float32))
                obs, _, _, _, _ = env.step(action)
        elapsed = time.process_time() - start
        state["obs"] = obs
        return elapsed / (frames // NUM_ENVS * NUM_ENVS)

    return run


def transitions_tensors(items: int, seed: int = 0) -> list[torch.Tensor]:
    """The buffer workloads' data as plain tensors: observation [17], action [6], next
    observation [17], reward, done, terminated [1]."""
    gen = torch.Generator().manual_seed(seed)
    return [
        torch.randn(items, 17, generator=gen),
        torch.randn(items, 6, generator=gen),
        torch.randn(items, 17, generator=gen),
        torch.randn(items, 1, generator=gen),
        torch.zeros(items, 1, dtype=torch.bool),
        torch.zeros(items, 1, dtype=torch.bool),
    ]


def sample_tensors(tensors: list[torch.Tensor], batch: int, calls: int) -> Callable[[], float]:
    """``randint`` + ``index_select`` on each preallocated tensor: seconds per sample."""
    items = tensors[0].shape[0]

    def run() -> float:
        start = time.process_time()
        for _ in range(calls):
            index = torch.randint(items, (batch,))
            [t.index_select(0, index) for t in tensors]
        return (time.process_time() - start) / calls

    return run


def gae_inputs(batch: int, steps: int, seed: int = 0) -> tuple:
    """``(gamma, lmbda, value, next_value, reward, done, terminated)``, ``[B, T, 1]`` each, 1 %
    episode ends (half of them truncations)."""
    gen = torch.Generator().manual_seed(seed)
    value, next_value, reward = (torch.randn(batch, steps, 1, generator=gen) for _ in range(3))
    done = torch.rand(batch, steps, 1, generator=gen) < 0.01
    terminated = done & (torch.rand(batch, steps, 1, generator=gen) < 0.5)
    return 0.99, 0.95, value, next_value, reward, done, terminated


def gae_loop(gamma, lmbda, value, next_value, reward, done, terminated):
    """GAE by hand, a Python loop over time (time at dim -2)."""
    not_terminated = (~terminated).to(reward.dtype)
    not_done = (~done).to(reward.dtype)
    delta = reward + gamma * not_terminated * next_value - value
    advantage = torch.empty_like(delta)
    running = torch.zeros_like(delta[:, 0])
    for t in range(delta.shape[1] - 1, -1, -1):
        running = delta[:, t] + gamma * lmbda * not_done[:, t] * running
        advantage[:, t] = running
    return advantage, advantage + value


def timed_call(fn: Callable[[], object], calls: int) -> Callable[[], float]:
    """``fn`` called ``calls`` times: seconds per call."""

    def run() -> float:
        start = time.process_time()
        for _ in range(calls):
            fn()
        return (time.process_time() - start) / calls

    return run
