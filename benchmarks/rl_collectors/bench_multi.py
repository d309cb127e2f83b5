"""MultiSyncDataCollector with 2 worker processes against the single-process collector.

Both collect 50 000 frames of ``GymEnv("CartPole-v1", num_envs=8)`` with
``QValueActor(MLP(64, 64))``, 1 008 frames per batch (504 per worker for the multi-process
one). Wall-clock frames/s (``time.perf_counter``: the work happens in other processes),
best of ``REPEATS``; worker start-up is excluded (the first batch is taken before timing).
The ratio is multi / single, measured in this process. Workers are forked and run one
torch thread each; the single-process collector runs with one torch thread too.

Run: ``uv run python benchmarks/rl_collectors/bench_multi.py``
"""

from __future__ import annotations

import os
import time

import torch

from rl_collectors import MultiSyncDataCollector, SyncDataCollector
from rl_core.modules import MLP, QValueActor
from rl_envs import GymEnv

FRAMES = 50_000
# A multiple of 2 workers x 8 envs (1 000 is not).
FRAMES_PER_BATCH = 1_008
REPEATS = 3


def make_env() -> GymEnv:
    return GymEnv("CartPole-v1", num_envs=8)


def timed(collector) -> float:
    iterator = iter(collector)
    next(iterator)  # start-up and the first batch are not timed
    start = time.perf_counter()
    frames = sum(batch.numel() for batch in iterator)
    elapsed = time.perf_counter() - start
    collector.shutdown()
    return frames / elapsed


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    policy = QValueActor(
        MLP(in_features=4, out_features=2, num_cells=[64, 64]), spec=make_env().action_spec
    )
    kwargs = {"frames_per_batch": FRAMES_PER_BATCH, "total_frames": FRAMES + FRAMES_PER_BATCH}
    single = max(timed(SyncDataCollector(make_env, policy, **kwargs)) for _ in range(REPEATS))
    multi = max(
        timed(MultiSyncDataCollector([make_env, make_env], policy, **kwargs))
        for _ in range(REPEATS)
    )
    print(f"machine: {os.cpu_count()} cores")
    print(f"SyncDataCollector: {single:,.0f} frames/s")
    print(f"MultiSyncDataCollector, 2 workers: {multi:,.0f} frames/s, ratio {multi / single:.2f}")


if __name__ == "__main__":
    main()
