"""SyncDataCollector against a plain gymnasium + MLP loop doing the same work.

``SyncDataCollector(GymEnv("CartPole-v1", num_envs=8), policy, frames_per_batch=1_000,
total_frames=50_000)`` against a loop over ``gymnasium.vector.SyncVectorEnv`` of 8 CartPoles
that calls the same MLP(64, 64) under ``torch.no_grad()`` and takes its argmax: 50 000 frames
each. Two policies are measured: ``QValueActor(mlp, spec=env.action_spec)`` (the usual DQN
actor: Q-values, argmax, one-hot action) and a bare ``TensorDictModule`` around
``mlp`` + a greedy one-hot layer. Frames/s are CPU time of this process
(``time.process_time``), best of ``REPEATS``; the ratio is collector / plain loop, measured
in this process. One torch thread.

A second table splits the collector's per-step cost: the policy call (through rl-core's
``PolicyCallPlan``, as the collector calls it, and as ``policy(td)``), the env's
``step_and_maybe_reset`` and the batch writer, each timed alone.

Run: ``uv run python benchmarks/rl_collectors/bench_sync.py``
"""

from __future__ import annotations

import time

import gymnasium as gym
import torch
from tensordict.nn import TensorDictModule
from torch import nn

import rl_core.modules
from rl_collectors import SyncDataCollector
from rl_core.modules import MLP, QValueActor
from rl_envs import GymEnv

# Absent from rl-core sources older than it (runs against main's sources, for before figures).
PolicyCallPlan = getattr(rl_core.modules, "PolicyCallPlan", None)

NUM_ENVS = 8
FRAMES = 50_000
FRAMES_PER_BATCH = 1_000
REPEATS = 3


class GreedyOneHot(nn.Module):
    def forward(self, values: torch.Tensor) -> torch.Tensor:
        return nn.functional.one_hot(values.argmax(-1), values.shape[-1]).bool()


def plain_loop(mlp: nn.Module) -> float:
    env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * NUM_ENVS)
    obs, _ = env.reset(seed=0)
    start = time.process_time()
    with torch.no_grad():
        for _ in range(FRAMES // NUM_ENVS):
            action = mlp(torch.as_tensor(obs, dtype=torch.float32)).argmax(-1).numpy()
            obs, _, _, _, _ = env.step(action)
    elapsed = time.process_time() - start
    env.close()
    return FRAMES / elapsed


def collector_loop(policy: nn.Module) -> float:
    env = GymEnv("CartPole-v1", num_envs=NUM_ENVS)
    env.set_seed(0)
    collector = SyncDataCollector(
        env, policy, frames_per_batch=FRAMES_PER_BATCH, total_frames=FRAMES
    )
    start = time.process_time()
    frames = sum(batch.numel() for batch in collector)
    elapsed = time.process_time() - start
    collector.shutdown()
    env.close()
    assert frames == FRAMES
    return FRAMES / elapsed


def per_step_costs(policy: nn.Module, steps: int = 2_000) -> dict[str, float]:
    """Microseconds per step of each part of the collector loop, timed alone."""
    from rl_core.envs import TrajectoryWriter

    env = GymEnv("CartPole-v1", num_envs=NUM_ENVS)
    env.set_seed(0)
    transitions, roots = [], []
    td = env.reset()
    with torch.no_grad():
        for _ in range(steps):
            roots.append(td)
            td, nxt = env.step_and_maybe_reset(policy(td))
            transitions.append(td)
            td = nxt
        start = time.process_time()
        for root in roots:
            policy(root.clone(False))
        policy_us = (time.process_time() - start) / steps * 1e6
        plan = policy if PolicyCallPlan is None else PolicyCallPlan(policy)  # as the collector
        start = time.process_time()
        for root in roots:
            plan(root.clone(False))
        plan_us = (time.process_time() - start) / steps * 1e6
        td = env.reset()
        acted = [policy(root.clone(False)) for root in roots]
        start = time.process_time()
        for root in acted:
            env.step_and_maybe_reset(root.clone(False))
        env_us = (time.process_time() - start) / steps * 1e6
    writer = TrajectoryWriter(steps)
    start = time.process_time()
    writer.start()
    for transition in transitions:
        writer.append(transition)
    writer.result()
    writer_us = (time.process_time() - start) / steps * 1e6
    env.close()
    return {
        "policy through PolicyCallPlan": plan_us,
        "policy(td)": policy_us,
        "env.step_and_maybe_reset": env_us,
        "writer": writer_us,
    }


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mlp = MLP(in_features=4, out_features=2, num_cells=[64, 64])
    spec = GymEnv("CartPole-v1", num_envs=NUM_ENVS).action_spec
    policies = {
        "QValueActor(MLP(64,64))": QValueActor(mlp, spec=spec),
        "TensorDictModule(MLP(64,64)+argmax)": TensorDictModule(
            nn.Sequential(mlp, GreedyOneHot()), in_keys=["observation"], out_keys=["action"]
        ),
    }
    plain = max(plain_loop(mlp) for _ in range(REPEATS))
    print(f"plain SyncVectorEnv(8) + MLP loop: {plain:,.0f} frames/s")
    for name, policy in policies.items():
        ours = max(collector_loop(policy) for _ in range(REPEATS))
        print(f"SyncDataCollector, {name}: {ours:,.0f} frames/s, ratio {ours / plain:.2f}")
    for name, policy in policies.items():
        costs = per_step_costs(policy)
        parts = ", ".join(f"{k} {v:.0f} us" for k, v in costs.items())
        print(f"per step (8 frames), {name}: {parts}")
    mlp_us = _time_mlp(mlp)
    print(f"per step, the bare MLP + argmax on an (8, 4) tensor: {mlp_us:.0f} us")


def _time_mlp(mlp: nn.Module, steps: int = 2_000) -> float:
    obs = torch.zeros(NUM_ENVS, 4)
    with torch.no_grad():
        start = time.process_time()
        for _ in range(steps):
            mlp(obs).argmax(-1).numpy()
    return (time.process_time() - start) / steps * 1e6


if __name__ == "__main__":
    main()
