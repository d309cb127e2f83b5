"""What a pause costs the next call: ``sum_tree_sample`` after a spin that touches no memory.

Run from the repository root::

    uv run python benchmarks/rl_kernels/bench_cold_calls.py

One ``sum_tree_sample`` of 256 draws over a 200k-leaf tree (the prioritized benchmark's),
timed alone after: nothing (back-to-back calls), a busy wait on the clock of 0.1 to 50 ms,
and a read of 4 to 32 MB of other data. On a machine whose caches and TLB survive a pause,
only the reads of more data than the last-level cache holds slow the call down. Where the
spins slow it down too, every benchmark that times short calls in blocks after other work
pays that cost once per block, whatever the other work was (see rl-buffers' README).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from rl_core import ops

LEAVES = 200_000
BATCH = 256
REPEATS = 40


def main() -> None:
    torch.set_num_threads(1)
    ops.load_kernel_packages()
    capacity = 1 << (LEAVES - 1).bit_length()  # the smallest power of two >= LEAVES
    sums, mins = torch.zeros(2 * capacity), torch.full((2 * capacity,), float("inf"))
    top = torch.ones(1)
    torch.ops.rl_core.sum_min_tree_priority_update_(
        sums, mins, top, torch.arange(LEAVES), torch.rand(LEAVES), 1e-8, 0.7, LEAVES
    )
    sample = torch.ops.rl_core.sum_tree_sample.default

    def after(pause) -> float:
        """Mean microseconds of one sample call right after ``pause()``."""
        total = 0.0
        for _ in range(REPEATS):
            uniform = torch.rand(BATCH)
            pause()
            start = time.perf_counter()
            sample(sums, mins, uniform, 0.5)
            total += time.perf_counter() - start
        return total / REPEATS * 1e6

    def spin(seconds: float):
        def pause() -> None:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                pass

        return pause

    print(f"sum_tree_sample({BATCH}) over {LEAVES} leaves, us, right after:")
    print(f"  nothing (back to back)        {after(lambda: None):8.1f}")
    for ms in (0.1, 1, 5, 17, 50):
        print(f"  a {ms:>4} ms spin (no memory)   {after(spin(ms / 1000)):8.1f}")
    for mb in (4, 16, 32):
        data = np.ones(mb << 17)  # float64: mb MB
        print(f"  a read of {mb:>2} MB             {after(data.sum):8.1f}")


if __name__ == "__main__":
    main()
