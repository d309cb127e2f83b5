"""Prioritized replay with a CUDA storage: iterations per second of the training loop's calls.

Run from the repository root on a machine with a GPU::

    uv run python benchmarks/rl_buffers/bench_prioritized_cuda.py [--items 1048576]

One iteration is ``TensorDictPrioritizedReplayBuffer.sample()`` (batch 256) from a
``LazyTensorStorage`` on the GPU, then ``update_tensordict_priority`` with new ``td_error``
values made on the GPU: what a learner on the GPU runs. Twice: with the sampler's trees on
the GPU (what the prioritized buffers choose for a CUDA storage), and on the CPU
(``PrioritizedSampler(device="cpu")``, each iteration moving 256 indices each way). Figures
are the best of five blocks of 200 iterations, wall-clock after a device sync. Run it once
with rl-kernels installed and once without (``uv pip uninstall rl-kernels``, or a
``PYTHONPATH`` without it) to compare the compiled kernels with rl_core's reference kernels.
"""

from __future__ import annotations

import argparse
import time

import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, PrioritizedSampler, TensorDictReplayBuffer
from rl_core import ops

BATCH = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2**20)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA device")
    device, n = torch.device("cuda"), args.items

    def flags() -> torch.Tensor:
        return torch.zeros(n, 1, dtype=torch.bool)

    data = TensorDict(
        {
            "observation": torch.randn(n, 17),
            "action": torch.randn(n, 6),
            "next": {
                "observation": torch.randn(n, 17),
                "reward": torch.randn(n, 1),
                "done": flags(),
                "terminated": flags(),
            },
        },
        [n],
    )
    for tree_device in (device, torch.device("cpu")):
        sampler = PrioritizedSampler(n, 0.7, 0.5, device=tree_device)
        storage = LazyTensorStorage(n, device=device)
        buffer = TensorDictReplayBuffer(storage=storage, sampler=sampler, batch_size=BATCH)
        buffer.extend(data)
        buffer.update_priority(torch.arange(n, device=device), torch.rand(n, device=device))
        seconds = _best_seconds(buffer, device)
        packages = ops.load_kernel_packages() or ("none: reference kernels",)
        print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, kernels: {packages}")
        print(
            f"prioritized sample({BATCH}) + update over {n} items, storage on {device}, "
            f"trees on {tree_device}: {1 / seconds:8.0f} it/s ({seconds * 1e6:.1f} us/it)"
        )


def _best_seconds(buffer: TensorDictReplayBuffer, device: torch.device) -> float:
    def step() -> None:
        batch = buffer.sample()
        batch.set("td_error", torch.rand(BATCH, device=device))
        buffer.update_tensordict_priority(batch)

    for _ in range(50):
        step()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(200):
            step()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / 200)
    return best


if __name__ == "__main__":
    main()
