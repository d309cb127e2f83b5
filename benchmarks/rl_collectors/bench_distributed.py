"""Collector nodes on torch.distributed against local worker processes, and weight pushes.

1. Throughput (the transport's overhead on one machine): ``DistributedSyncCollector`` with
   ``WORKERS`` nodes (one ``SyncDataCollector`` over ``GymEnv("CartPole-v1", num_envs=8)``
   each, gloo) against ``MultiSyncCollector`` with the same ``WORKERS`` env workers, the
   same ``QValueActor(MLP(64, 64))`` policy and ``frames_per_batch=1_008``; wall-clock
   frames/s over ``FRAMES`` frames after the first batch (start-up excluded).
2. Weight push: ``update_policy_weights_()`` of a policy of 10 010 882 parameters
   (``MLP(4, 2, num_cells=[3160, 3160])`` in a ``QValueActor``: 40 MB of float32) to 2 and
   4 ranks, for each scheme; median of ``PUSHES`` calls, each timed from the call until it
   returns (torch.distributed and RPC return once every node received the weights; the
   shared-memory scheme once its one shared copy is written, the pipe scheme once the
   weights are queued for every worker: the workers load them at their next batch).
   ``RPCCollector`` runs in a child process per case (torch starts one RPC agent per
   process).

Run: ``uv run python benchmarks/rl_collectors/bench_distributed.py``
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import torch

from rl_collectors import MultiSyncCollector
from rl_collectors.distributed import DistributedSyncCollector, RPCCollector
from rl_collectors.weight_sync import (
    DistributedWeightSyncScheme,
    MultiProcessWeightSyncScheme,
    RPCWeightSyncScheme,
    SharedMemWeightSyncScheme,
)
from rl_core.modules import MLP, QValueActor
from rl_envs import GymEnv

FRAMES = 50_400
FRAMES_PER_BATCH = 1_008
WORKERS = 2
PUSHES = 5
BIG_CELLS = [3160, 3160]  # 10 010 882 parameters with the biases


def make_env() -> GymEnv:
    return GymEnv("CartPole-v1", num_envs=8)


def policy(num_cells: list[int]) -> QValueActor:
    return QValueActor(
        MLP(in_features=4, out_features=2, num_cells=num_cells), spec=make_env().action_spec
    )


def big_policy() -> QValueActor:
    return policy(BIG_CELLS)


def frames_per_second(collector) -> float:
    iterator = iter(collector)
    next(iterator)
    start = time.perf_counter()
    frames = sum(batch.numel() for batch in iterator)
    return frames / (time.perf_counter() - start)


def throughput() -> dict[str, float]:
    out = {}
    for name, cls in (
        ("MultiSyncCollector", MultiSyncCollector),
        ("DistributedSyncCollector", DistributedSyncCollector),
    ):
        collector = cls(
            [make_env] * WORKERS,
            policy([64, 64]),
            frames_per_batch=FRAMES_PER_BATCH,
            total_frames=FRAMES + FRAMES_PER_BATCH,
        )
        try:
            out[name] = frames_per_second(collector)
        finally:
            collector.shutdown()
    return out


def median_push(collector) -> float:
    collector.next()  # the nodes are up and have collected once
    times = []
    for _ in range(PUSHES):
        start = time.perf_counter()
        collector.update_policy_weights_()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def push_local(scheme: str, ranks: int) -> float:
    """The push time of one scheme that runs in this process."""
    envs = [make_env] * ranks
    kwargs = {"frames_per_batch": 8 * ranks}
    if scheme == "distributed (DistributedWeightUpdater)":
        collector = DistributedSyncCollector(envs, big_policy(), **kwargs)
    elif scheme == "distributed (DistributedWeightSyncScheme)":
        schemes = {"policy": DistributedWeightSyncScheme()}
        collector = DistributedSyncCollector(
            envs, big_policy(), weight_sync_schemes=schemes, **kwargs
        )
    else:
        cls = {
            "shared memory (SharedMemWeightSyncScheme)": SharedMemWeightSyncScheme,
            "pipes (MultiProcessWeightSyncScheme)": MultiProcessWeightSyncScheme,
        }[scheme]
        collector = MultiSyncCollector(
            envs, big_policy(), weight_sync_schemes={"policy": cls()}, **kwargs
        )
    try:
        return median_push(collector)
    finally:
        collector.shutdown()


def push_rpc(scheme: str, ranks: int) -> float:
    """The push time of an RPCCollector scheme (in this process: run as a child)."""
    schemes = {"policy": RPCWeightSyncScheme()} if "Scheme" in scheme else None
    collector = RPCCollector(
        [make_env] * ranks,
        big_policy(),
        frames_per_batch=8 * ranks,
        sync=True,
        weight_sync_schemes=schemes,
    )
    try:
        return median_push(collector)
    finally:
        collector.shutdown()


RPC_SCHEMES = ["rpc (RPCWeightUpdater)", "rpc (RPCWeightSyncScheme)"]
LOCAL_SCHEMES = [
    "distributed (DistributedWeightUpdater)",
    "distributed (DistributedWeightSyncScheme)",
    "shared memory (SharedMemWeightSyncScheme)",
    "pipes (MultiProcessWeightSyncScheme)",
]


def main() -> None:
    params = sum(p.numel() for p in big_policy().parameters())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    rates = throughput()
    print(f"\nThroughput, {WORKERS} env workers, CartPole x8 each, {FRAMES} frames:")
    for name, rate in rates.items():
        print(f"  {name:26s} {rate:10.0f} frames/s")
    ratio = rates["DistributedSyncCollector"] / rates["MultiSyncCollector"]
    print(f"  distributed / multi-process: {ratio:.2f}")
    print(
        f"\nWeight push of {params:,} parameters ({params * 4 / 1e6:.0f} MB), median of {PUSHES}:"
    )
    for ranks in (2, 4):
        for scheme in LOCAL_SCHEMES + RPC_SCHEMES:
            if scheme in RPC_SCHEMES:
                child = subprocess.run(
                    [sys.executable, __file__, "--rpc", scheme, str(ranks)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                seconds = json.loads(child.stdout.strip().splitlines()[-1])
            else:
                seconds = push_local(scheme, ranks)
            print(f"  {ranks} ranks  {scheme:44s} {seconds * 1e3:8.1f} ms", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--rpc":
        print(json.dumps(push_rpc(sys.argv[2], int(sys.argv[3]))))
    else:
        main()
