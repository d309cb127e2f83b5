"""TorchRL's prioritized replay on the workload of ``benchmarks/rl_buffers/bench_buffers.py``.

``TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(200_000))``
filled with the same transitions (``observation`` [17], ``action`` [6], ``next`` {``observation``
[17], ``reward`` [1], ``done`` [1], ``terminated`` [1]}), every priority set at random, then
``sample()`` of 256 + ``update_tensordict_priority`` per iteration, one torch thread. The numpy
cumulative-sum step of ``bench_buffers.py`` runs in the same rounds: it is the yardstick shared
by both scripts, since TorchRL runs in its own environment (see ``pyproject.toml``).

Run from the repository root::

    uv run --project benchmarks/torchrl_reference python benchmarks/torchrl_reference/bench_prioritized.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch
import torchrl
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage, TensorDictPrioritizedReplayBuffer

ITEMS = 200_000
BATCH = 256
ROUNDS = 10
CALLS = 20


def transitions(n: int) -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(n, 17),
            "action": torch.randn(n, 6),
            "next": {
                "observation": torch.randn(n, 17),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )


def best_of(**fns: Callable[[], object]) -> dict[str, tuple[float, float]]:
    """Per-call seconds (wall-clock, this thread's CPU time) of each function, best block."""
    best = {name: (float("inf"), float("inf")) for name in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            start, start_cpu = time.perf_counter(), time.thread_time()
            for _ in range(CALLS):
                fn()
            wall = (time.perf_counter() - start) / CALLS
            cpu = (time.thread_time() - start_cpu) / CALLS
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


def main() -> None:
    torch.set_num_threads(1)
    buffer = TensorDictPrioritizedReplayBuffer(
        alpha=0.7, beta=0.5, storage=LazyTensorStorage(ITEMS), batch_size=BATCH
    )
    buffer.extend(transitions(ITEMS))
    buffer.update_priority(torch.arange(ITEMS), torch.rand(ITEMS))

    def step() -> None:
        batch = buffer.sample()
        batch.set("td_error", torch.rand(BATCH))
        buffer.update_tensordict_priority(batch)

    rng = np.random.default_rng(0)
    priorities = rng.random(ITEMS) ** 0.7

    def numpy_cumsum_step() -> None:
        cumulative = np.cumsum(priorities)
        index = np.searchsorted(cumulative, rng.random(BATCH) * cumulative[-1], side="right")
        np.minimum(index, ITEMS - 1, out=index)
        priorities[index] = rng.random(BATCH) ** 0.7

    best = best_of(torchrl=step, numpy=numpy_cumsum_step)
    print(f"torchrl {torchrl.__version__}, torch {torch.__version__}, 1 thread")
    print(f"prioritized sample({BATCH}) + update over {ITEMS} items, it/s:")
    print("                                  wall-clock   one core (thread CPU time)")
    for label, name in (("TorchRL", "torchrl"), ("numpy cumsum each step", "numpy")):
        wall, cpu = best[name]
        print(f"  {label:30s} {1 / wall:8.0f}     {1 / cpu:8.0f}")


if __name__ == "__main__":
    main()
