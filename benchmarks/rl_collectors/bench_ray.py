"""RayCollector with 2 local actors: frames/s, and the weight-sync latency of a 1M-param policy.

1. Throughput: ``RayCollector(GymEnv("CartPole-v1", num_envs=8), QValueActor(MLP(64, 64)),
   num_collectors=2, frames_per_batch=1_008, sync=True)`` for 50 000 frames, wall-clock
   frames/s after the first batch (actor start-up excluded), against a
   ``SyncDataCollector`` in this process doing the same work (ratio Ray / single).
2. Weight sync: ``update_policy_weights_()`` of a policy with 1 000 000 parameters
   (``MLP(4, 2, num_cells=[998, 998])`` in a QValueActor: about 1.0M float32, 4 MB), timed
   from the call until both actors have loaded the weights; median of ``SYNCS`` calls.

Ray runs locally on 127.0.0.1 (``RAY_AUTH_MODE=disabled``) in a fresh temp dir, stopped at
the end.

Run: ``uv run python benchmarks/rl_collectors/bench_ray.py``
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# workers run this interpreter, not `uv run` in an uploaded copy of the working directory
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

import ray
import torch

from rl_collectors import RayCollector, SyncDataCollector
from rl_core.modules import MLP, QValueActor
from rl_envs import GymEnv

FRAMES = 50_000
FRAMES_PER_BATCH = 1_008
SYNCS = 20


def make_env() -> GymEnv:
    return GymEnv("CartPole-v1", num_envs=8)


def policy(num_cells: list[int]) -> QValueActor:
    return QValueActor(
        MLP(in_features=4, out_features=2, num_cells=num_cells), spec=make_env().action_spec
    )


def timed(collector) -> float:
    iterator = iter(collector)
    next(iterator)
    start = time.perf_counter()
    frames = sum(batch.numel() for batch in iterator)
    return frames / (time.perf_counter() - start)


def main() -> None:
    torch.set_num_threads(1)
    temp_dir = tempfile.mkdtemp(prefix="rlc-ray-bench-")
    ray.init(
        address="local",
        num_cpus=2,
        _node_ip_address="127.0.0.1",
        _temp_dir=temp_dir,
        include_dashboard=False,
        log_to_driver=False,
    )
    try:
        small = policy([64, 64])
        kwargs = {"frames_per_batch": FRAMES_PER_BATCH, "total_frames": FRAMES + FRAMES_PER_BATCH}
        single = SyncDataCollector(make_env, small, **kwargs)
        single_fps = timed(single)
        single.shutdown()
        collector = RayCollector(make_env, small, num_collectors=2, **kwargs)
        ray_fps = timed(collector)
        collector.shutdown()
        print(f"SyncDataCollector in this process: {single_fps:,.0f} frames/s")
        print(f"RayCollector, 2 actors: {ray_fps:,.0f} frames/s, ratio {ray_fps / single_fps:.2f}")

        big = policy([998, 998])
        n_params = sum(p.numel() for p in big.parameters())
        collector = RayCollector(make_env, big, num_collectors=2, frames_per_batch=1_008)
        collector.next()
        latencies = []
        for _ in range(SYNCS):
            start = time.perf_counter()
            collector.update_policy_weights_()
            latencies.append(time.perf_counter() - start)
        collector.shutdown()
        print(
            f"weight sync, {n_params:,} params to 2 actors: median "
            f"{statistics.median(latencies) * 1e3:.1f} ms, min {min(latencies) * 1e3:.1f} ms"
        )
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
