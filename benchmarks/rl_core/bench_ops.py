"""Times the reference kernels of ``rl_core.ops`` (the baseline a compiled kernel must beat).

Run from the repository root::

    uv run python benchmarks/rl_core/bench_ops.py [--device cuda] [--repeat 20]

Prints microseconds per call (median over ``--repeat`` timed calls after two warm-up calls)
for GAE on ``[B=256, T=1000, 1]`` (the public wrapper and the bare op in the ``[T, N]``
kernel layout) and for a sum tree of capacity 2**20 (the ops ``torch.ops.rl_core.*``): an
update of 256 leaves, a prefix-sum search of 256 values, and both together.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from rl_core.ops import generalized_advantage_estimate


def _median_us(fn: Callable[[], object], device: torch.device, repeat: int) -> float:
    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(2):
        fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    device = torch.device(args.device)
    gen = torch.Generator(device=device).manual_seed(0)

    batch, steps = 256, 1000
    value, next_value, reward = (
        torch.randn(batch, steps, 1, generator=gen, device=device) for _ in range(3)
    )
    done = torch.rand(batch, steps, 1, generator=gen, device=device) < 0.01
    kernel_args = [x.squeeze(-1).T.contiguous() for x in (value, next_value, reward, done, done)]
    gae_op = torch.ops.rl_core.generalized_advantage_estimate

    capacity, queries = 2**20, 256
    tree_ops = torch.ops.rl_core  # the tree ops themselves (rl_buffers.trees wraps them)
    tree = torch.zeros(2 * capacity, dtype=torch.float32, device=device)  # an empty sum tree
    tree_ops.sum_tree_update_(
        tree,
        torch.arange(capacity, device=device),
        torch.rand(capacity, generator=gen, device=device),
    )

    def update() -> None:
        index = torch.randint(0, capacity, (queries,), generator=gen, device=device)
        tree_ops.sum_tree_update_(tree, index, torch.rand(queries, generator=gen, device=device))

    def search() -> None:
        uniform = torch.rand(queries, generator=gen, device=device)
        tree_ops.sum_tree_find_prefixsum(tree, uniform * tree[1])  # tree[1]: the total

    def update_and_search() -> None:
        update()
        search()

    results = {
        f"GAE wrapper [B={batch}, T={steps}, 1]": lambda: generalized_advantage_estimate(
            0.99, 0.95, value, next_value, reward, done
        ),
        f"GAE op [T={steps}, N={batch}]": lambda: gae_op(0.99, 0.95, *kernel_args),
        f"sum tree update, capacity 2**20, K={queries}": update,
        f"sum tree search, capacity 2**20, K={queries}": search,
        f"sum tree update + search, capacity 2**20, K={queries}": update_and_search,
    }
    print(f"torch {torch.__version__}, device {device}, threads {torch.get_num_threads()}")
    for name, fn in results.items():
        print(f"{name:<52} {_median_us(fn, device, args.repeat):>12.1f} us/call")


if __name__ == "__main__":
    main()
