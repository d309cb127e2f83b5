"""The fused prioritized-replay ops one by one, compiled kernels against the separate ops.

Run from the repository root::

    uv run python benchmarks/rl_kernels/bench_priority_trees.py [--leaves 200000] [--batch 256]

Per call, in this thread's CPU time (one torch thread), best of several blocks:
``sum_tree_sample`` on fresh uniforms (random descents, the cache misses of a real run)
and on one fixed batch of uniforms (the same descents each call: the tree paths stay in
the cache), against ``sum_tree_find_prefixsum`` plus the weights in eager torch; and
``sum_min_tree_update_`` against ``sum_tree_update_`` + ``min_tree_update_``;
``sum_min_tree_priority_update_`` (checks, powers and both trees) against the same work in
eager torch calls plus ``sum_min_tree_update_``; and a replay buffer's batch read,
``gather_rows`` over the six leaves of the rl-buffers benchmark's items (``observation``
[17], ``action`` [6], ``next`` ``observation`` [17], ``reward`` [1], ``done`` [1],
``terminated`` [1]) against one ``index_select`` per leaf, and over the same data in two
tables (the four float leaves in one ``[N, 41]``, the two flags in one ``[N, 2]``: a
storage layout rl-buffers does not use), and over the layout rl-buffers' CPU
``LazyTensorStorage`` uses (the four float leaves as column slices of one ``[N, 41]``
table, the two flags apart). The sample and the priority update also run with the sum tree
and the min tree as the two columns of one ``[2 * capacity, 2]`` table (node i of both in
one cache line; a layout rl-buffers does not use: the update gains, the sample loses, and
rl-buffers' loop of both gained nothing measurable in an A/B in one process). Fresh random
inputs are drawn in every call of both sides.
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
    capacity = 1 << (n - 1).bit_length()  # the smallest power of two >= n
    sums, mins = torch.zeros(2 * capacity), torch.full((2 * capacity,), float("inf"))
    torch.ops.rl_core.sum_min_tree_update_(sums, mins, torch.arange(n), torch.rand(n))
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

    priority_update = torch.ops.rl_core.sum_min_tree_priority_update_.default
    top = torch.ones(1)

    def eager_priority_update() -> None:
        index = torch.randint(n, (batch,))
        low, high = (bound.item() for bound in torch.aminmax(index))
        if low < 0 or high >= n or not values.min().item() >= 0:
            raise IndexError("out of range")
        value = values.add(1e-8).pow_(0.7)
        top.fill_(max(top.item(), value.max().item()))
        torch.ops.rl_core.sum_min_tree_update_.default(sums, mins, index, value)

    # Both trees as the columns of one [2 * capacity, 2] table (node i of both in one cache
    # line), which the CPU kernels read and write in place.
    table = torch.stack((sums, mins), 1)
    paired_sums, paired_mins = table[:, 0], table[:, 1]
    paired_top = torch.ones(1)

    gather = torch.ops.rl_core.gather_rows.default
    widths = (17, 6, 17, 1)
    leaves = [torch.randn(n, width) for width in widths]
    leaves += [torch.rand(n, 1) < 0.1, torch.rand(n, 1) < 0.1]
    two_tables = [torch.cat(leaves[:4], 1), torch.cat(leaves[4:], 1)]
    starts = [sum(widths[:i]) for i in range(len(widths))]
    packed = [two_tables[0][:, s : s + w] for s, w in zip(starts, widths, strict=True)]
    packed += leaves[4:]

    rows = {
        "sum_tree_sample, fresh uniforms": lambda: sample(sums, mins, torch.rand(batch), 0.5),
        "sum_tree_sample, fixed uniforms": lambda: sample(sums, mins, fixed, 0.5),
        "find_prefixsum + weights (eager)": separate_sample,
        "sum_min_tree_update_": lambda: torch.ops.rl_core.sum_min_tree_update_.default(
            sums, mins, torch.randint(n, (batch,)), values
        ),
        "sum_ + min_tree_update_": separate_update,
        "sum_min_tree_priority_update_": lambda: priority_update(
            sums, mins, top, torch.randint(n, (batch,)), values, 1e-8, 0.7, n
        ),
        "checks + powers + sum_min_tree_update_": eager_priority_update,
        "sum_tree_sample, fresh, trees as columns": lambda: sample(
            paired_sums, paired_mins, torch.rand(batch), 0.5
        ),
        "sum_min_tree_priority_update_, columns": lambda: priority_update(
            paired_sums, paired_mins, paired_top, torch.randint(n, (batch,)), values, 1e-8, 0.7, n
        ),
        f"gather_rows, six leaves of {n} items": lambda: gather(leaves, torch.randint(n, (batch,))),
        "index_select per leaf": lambda: [
            leaf.index_select(0, index) for index in [torch.randint(n, (batch,))] for leaf in leaves
        ],
        "gather_rows, [N, 41] + [N, 2] tables": lambda: gather(
            two_tables, torch.randint(n, (batch,))
        ),
        "gather_rows, column slices + two flags": lambda: gather(
            packed, torch.randint(n, (batch,))
        ),
        "torch.rand (in the rows above)": lambda: torch.rand(batch),
        "torch.randint (in the rows above)": lambda: torch.randint(n, (batch,)),
    }
    print(f"{n} leaves, batch {batch}, us per call (thread CPU time):")
    for label, fn in rows.items():
        print(f"  {label:42s} {best_cpu_us(fn):8.1f}")


if __name__ == "__main__":
    main()
