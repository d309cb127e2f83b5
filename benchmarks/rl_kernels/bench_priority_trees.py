"""The fused prioritized-replay ops one by one, compiled kernels against the separate ops.

Run from the repository root::

    uv run python benchmarks/rl_kernels/bench_priority_trees.py [--leaves 200000] [--batch 256]

Per call, in this thread's CPU time (one torch thread), best of several blocks:
``sum_tree_sample`` on fresh uniforms (random descents, the cache misses of a real run)
and on one fixed batch of uniforms (the same descents each call: the tree paths stay in
the cache), against ``sum_tree_find_prefixsum`` plus the weights in eager torch; and
``sum_min_tree_update_`` against ``sum_tree_update_`` + ``min_tree_update_``. Fresh
random inputs are drawn in every call of both sides.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from rl_core import ops


def best_cpu_us(fn: Callable[[], object], calls: int = 200, blocks: int = 7) -> float:
    for _ in range(20):
        fn()
    best = float("inf")
    for _ in range(blocks):
        start = time.thread_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.thread_time() - start) / calls * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaves", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"kernel packages: {ops.load_kernel_packages()}, torch {torch.__version__}")
    n, batch = args.leaves, args.batch
    capacity = ops.segment_tree_capacity(n)
    sums, mins = ops.make_sum_tree(capacity), ops.make_min_tree(capacity)
    ops.sum_min_tree_update_(sums, mins, torch.arange(n), torch.rand(n))
    sample = torch.ops.rl_core.sum_tree_sample.default
    find = torch.ops.rl_core.sum_tree_find_prefixsum.default
    fixed = torch.rand(batch)

    def separate_sample() -> object:
        index = find(sums, torch.rand(batch).mul_(sums[1]))
        return sums[capacity:].index_select(0, index).div_(mins[1]).pow_(-0.5)

    values = torch.rand(batch)

    def separate_update() -> None:
        index = torch.randint(n, (batch,))
        torch.ops.rl_core.sum_tree_update_.default(sums, index, values)
        torch.ops.rl_core.min_tree_update_.default(mins, index, values)

    rows = {
        "sum_tree_sample, fresh uniforms": lambda: sample(sums, mins, torch.rand(batch), 0.5),
        "sum_tree_sample, fixed uniforms": lambda: sample(sums, mins, fixed, 0.5),
        "find_prefixsum + weights (eager)": separate_sample,
        "sum_min_tree_update_": lambda: torch.ops.rl_core.sum_min_tree_update_.default(
            sums, mins, torch.randint(n, (batch,)), values
        ),
        "sum_ + min_tree_update_": separate_update,
        "torch.rand (in the rows above)": lambda: torch.rand(batch),
    }
    print(f"{n} leaves, batch {batch}, us per call (thread CPU time):")
    for label, fn in rows.items():
        print(f"  {label:34s} {best_cpu_us(fn):8.1f}")


if __name__ == "__main__":
    main()
