"""CompressedListStorage against LazyMemmapStorage on Atari-like frames: size and speed.

Run from the repository root (needs ``rl-buffers[compress]``)::

    uv run python benchmarks/rl_buffers/bench_compressed.py [--items 2000] [--rounds 3]
        [--level 3]

Workload: ``--items`` transitions of a 4-frame stack of 84x84 uint8 frames (``pixels``
[4, 84, 84], 28,224 bytes), generated here: a flat background, a score bar, a paddle, a
ball and a brick wall that loses bricks, 1 % salt noise; consecutive stacks share 3 of their
4 frames, as Atari frame stacks do. Each figure is the best of ``--rounds``:

- ratio: raw bytes / stored bytes (``CompressedListStorage.bytes()``; the memmap stores raw);
- write: ``extend`` of all items in batches of 32 through ``TensorDictReplayBuffer``, MB/s
  of raw frames;
- read: ``sample(32)`` batches, MB/s of raw frames returned.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
from tensordict import TensorDict

from rl_buffers import CompressedListStorage, LazyMemmapStorage, TensorDictReplayBuffer

BATCH = 32


def atari_like_frames(count: int, seed: int = 0) -> torch.Tensor:
    """``[count, 84, 84]`` uint8 frames of a Breakout-like screen."""
    g = torch.Generator().manual_seed(seed)
    frames = torch.full((count, 84, 84), 0, dtype=torch.uint8)
    bricks = torch.ones(6, 14, dtype=torch.bool)
    bx, by, vx, vy, paddle = 40.0, 50.0, 1.3, -1.1, 36
    for i in range(count):
        f = frames[i]
        f[:6, :] = 70  # score bar
        f[6:8, :] = 140
        if i % 7 == 0:
            row, col = (
                torch.randint(0, 6, (1,), generator=g),
                torch.randint(0, 14, (1,), generator=g),
            )
            bricks[row, col] = False
        for r in range(6):
            for c in range(14):
                if bricks[r, c]:
                    f[12 + 3 * r : 14 + 3 * r, 6 * c : 6 * c + 5] = 90 + 20 * r
        bx, by = bx + vx, by + vy
        if not 1 < bx < 82:
            vx = -vx
        if not 30 < by < 76:
            vy = -vy
        f[int(by) : int(by) + 2, int(bx) : int(bx) + 2] = 255
        paddle = max(0, min(76, paddle + int(torch.randint(-2, 3, (1,), generator=g))))
        f[78:80, paddle : paddle + 8] = 200
        noise = torch.rand(84, 84, generator=g) < 0.01
        f[noise] = torch.randint(0, 256, (int(noise.sum()),), generator=g).to(torch.uint8)
    return frames


def transitions(items: int) -> TensorDict:
    frames = atari_like_frames(items + 3)
    stacks = torch.stack([frames[i : i + 4] for i in range(items)])
    return TensorDict({"pixels": stacks, "action": torch.arange(items) % 4}, [items])


def measure(make_storage, data: TensorDict, rounds: int) -> dict[str, float]:
    raw = data["pixels"].numel()
    best_write = best_read = float("inf")
    ratio = 1.0
    for _ in range(rounds):
        storage = make_storage()
        buffer = TensorDictReplayBuffer(storage=storage, batch_size=BATCH)
        start = time.perf_counter()
        for i in range(0, data.shape[0], BATCH):
            buffer.extend(data[i : i + BATCH])
        best_write = min(best_write, time.perf_counter() - start)
        reads = max(1, data.shape[0] // BATCH)
        start = time.perf_counter()
        for _ in range(reads):
            buffer.sample()
        best_read = min(best_read, (time.perf_counter() - start) / (reads * BATCH))
        if isinstance(storage, CompressedListStorage):
            ratio = raw / storage.bytes()
    per_item = raw / data.shape[0]
    return {
        "ratio": ratio,
        "write_MBps": raw / best_write / 1e6,
        "read_MBps": per_item / best_read / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--level", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = transitions(args.items)
    print(
        f"{args.items} items of pixels [4, 84, 84] uint8, batches of {BATCH}, best of {args.rounds}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        runs = {
            f"CompressedListStorage(level={args.level})": lambda: CompressedListStorage(
                args.items, compression_level=args.level
            ),
            "LazyMemmapStorage": lambda: LazyMemmapStorage(
                args.items, scratch_dir=tempfile.mkdtemp(dir=tmp)
            ),
        }
        for name, make in runs.items():
            r = measure(make, data, args.rounds)
            print(
                f"{name:34s} ratio {r['ratio']:6.1f}x  write {r['write_MBps']:8.1f} MB/s  "
                f"read {r['read_MBps']:8.1f} MB/s"
            )


if __name__ == "__main__":
    main()
