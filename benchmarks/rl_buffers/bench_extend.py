"""``extend`` of 1,000 rows of 17 floats, against a plain indexed tensor copy in the same process.

Workload: a buffer of 100,000 items, ``extend`` of 1,000 rows of 17 float32 (as a plain
tensor into a ``ReplayBuffer``, and as a TensorDict ``{"observation": [1000, 17]}`` into a
``TensorDictReplayBuffer``), one torch thread. The reference is what any storage must do at
least: ``table[index] = rows`` with ``index`` the 1,000 next row numbers (a LongTensor) into a
preallocated ``[100_000, 17]`` table. Each round times a block of ``--calls`` calls of every
contender, taking turns; the figure is the median over ``--rounds`` rounds (the machine is
shared: medians, not bests), in microseconds per item, and the ratio of that median to the
plain indexed copy's (also a slice copy of the same rows, for scale, and the indexed copy into
a file-backed table of the same shape, ``torch.from_file(shared=True)``, the reference of
``LazyMemmapStorage``).

The same script runs TorchRL's buffers (``--impl torchrl``) in TorchRL's environment::

    uv run python benchmarks/rl_buffers/bench_extend.py
    uv run --project benchmarks/torchrl_reference python benchmarks/rl_buffers/bench_extend.py --impl torchrl
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable

import torch
from tensordict import TensorDict

CAPACITY = 100_000
ROWS = 1000
WIDTH = 17


def buffers(impl: str, scratch: str) -> dict[str, tuple[object, object]]:
    if impl == "torchrl":
        from torchrl.data import (
            LazyMemmapStorage,
            LazyTensorStorage,
            ReplayBuffer,
            TensorDictReplayBuffer,
        )
    else:
        from rl_buffers import (
            LazyMemmapStorage,
            LazyTensorStorage,
            ReplayBuffer,
            TensorDictReplayBuffer,
        )
    rows = torch.randn(ROWS, WIDTH)
    td = TensorDict({"observation": rows.clone()}, [ROWS])
    return {
        "LazyTensorStorage, tensor": (ReplayBuffer(storage=LazyTensorStorage(CAPACITY)), rows),
        "LazyTensorStorage, TensorDict": (
            TensorDictReplayBuffer(storage=LazyTensorStorage(CAPACITY)),
            td,
        ),
        "LazyMemmapStorage, TensorDict": (
            TensorDictReplayBuffer(
                storage=LazyMemmapStorage(CAPACITY, scratch_dir=f"{scratch}/memmap")
            ),
            td,
        ),
    }


def timed(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls / ROWS * 1e6  # us per item


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=["rl_buffers", "torchrl"], default="rl_buffers")
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(1)
    table = torch.empty(CAPACITY, WIDTH)
    source = torch.randn(ROWS, WIDTH)
    cursor = [0]

    def plain() -> None:
        start = cursor[0]
        index = torch.arange(start, start + ROWS) % CAPACITY
        table[index] = source
        cursor[0] = (start + ROWS) % CAPACITY

    def plain_slices() -> None:  # the same rows as one or two slice copies
        start = cursor[0]
        stop = start + ROWS
        if stop <= CAPACITY:
            table[start:stop] = source
        else:
            table[start:] = source[: CAPACITY - start]
            table[: stop - CAPACITY] = source[CAPACITY - start :]
        cursor[0] = stop % CAPACITY

    with tempfile.TemporaryDirectory() as scratch:
        # The same indexed copy into a file-backed table (what a memory-mapped storage writes
        # into): the reference of LazyMemmapStorage's row.
        mapped = torch.from_file(
            f"{scratch}/table.bin", shared=True, size=CAPACITY * WIDTH, dtype=torch.float32
        ).view(CAPACITY, WIDTH)

        def plain_mapped() -> None:
            start = cursor[0]
            index = torch.arange(start, start + ROWS) % CAPACITY
            mapped[index] = source
            cursor[0] = (start + ROWS) % CAPACITY

        contenders = buffers(args.impl, scratch)
        for buffer, data in contenders.values():  # allocate, fill once around
            for _ in range(CAPACITY // ROWS + 1):
                buffer.extend(data)
        names = ["plain", "slices", "mapped", *contenders]
        times: dict[str, list[float]] = {name: [] for name in names}
        ratios: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.rounds):
            reference = timed(plain, args.calls)
            times["plain"].append(reference)
            times["slices"].append(timed(plain_slices, args.calls))
            times["mapped"].append(timed(plain_mapped, args.calls))
            for name, (buffer, data) in contenders.items():
                value = timed(lambda buffer=buffer, data=data: buffer.extend(data), args.calls)
                times[name].append(value)
                ratios[name].append(value / reference)
    print(
        f"{args.impl}: extend of {ROWS} rows of {WIDTH} floats into {CAPACITY:,} items, one "
        f"thread, median of {args.rounds} rounds of {args.calls} calls"
    )
    print(f"  {'plain indexed copy':32s} {statistics.median(times['plain']):6.3f} us/item")
    print(f"  {'plain slice copy':32s} {statistics.median(times['slices']):6.3f} us/item")
    mapped_median = statistics.median(times["mapped"])
    print(f"  {'plain indexed copy, file-backed':32s} {mapped_median:6.3f} us/item")
    plain_median = statistics.median(times["plain"])
    for name in contenders:
        # the ratio of the medians: a round's ratio swings with whatever else the shared
        # machine runs during its short reference block
        print(
            f"  {name:32s} {statistics.median(times[name]):6.3f} us/item   "
            f"{statistics.median(times[name]) / plain_median:5.2f}x the plain indexed copy "
            f"(median of per-round ratios {statistics.median(ratios[name]):.2f})"
        )
        if "Memmap" in name:
            print(
                f"  {'':32s} {statistics.median(times[name]) / mapped_median:16.2f}x the "
                f"indexed copy into a file-backed table"
            )


if __name__ == "__main__":
    main()
