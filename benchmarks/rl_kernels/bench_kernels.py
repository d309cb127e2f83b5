"""Times rl-kernels' compiled ops against plain loops doing the same work, in one process.

Run from the repository root::

    uv run python benchmarks/rl_kernels/bench_kernels.py            # CPU, one thread
    uv run python benchmarks/rl_kernels/bench_kernels.py --device cuda

GAE: ``rl_core.ops.generalized_advantage_estimate`` on ``[B, T, 1]`` (time at -2; the
public wrapper, layout moves included; the compiled kernel serves it) against a plain torch
loop over time and a numpy loop over time on ``[B, T]``, and rl_core's reference kernel.
Sizes ``[64, 1000]`` and ``[1, 2048]`` on CPU, ``[4096, 1000]`` on CUDA.

Prioritized replay: one iteration is sample(256) + update(256) over ``--items`` items
(200,000 on CPU, 2**20 on CUDA), written straight against ``rl_core.ops`` (rl-buffers is
not used): draw 256 uniforms times the total, prefix-sum search, importance weights from
the leaf priorities and the min tree, then new priorities written into the sum tree and the
min tree. The same iteration with rl_core's reference kernels called directly is the
baseline. A second pair of rows times the fused ops that rl-buffers' ``PrioritizedSampler``
calls: ``sum_tree_sample`` (draw and weights) and ``sum_min_tree_priority_update_`` (raw
priorities checked, raised to ``alpha`` and written into both trees). Figures are the best
of ``--repeat`` timed runs; on CPU they are the thread's CPU time (one torch thread), which
other processes on a shared machine inflate less than wall-clock time, on CUDA wall-clock
time after a device sync.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import torch

import rl_kernels
from rl_core import ops
from rl_core.ops import reference


def _best_seconds(fn: Callable[[], object], device: torch.device, repeat: int, inner: int) -> float:
    # CPU: this thread's CPU time (time.thread_time), which a loaded machine's other
    # processes do not inflate the way they inflate wall-clock time; the work is single-
    # threaded (torch.set_num_threads(1)). CUDA: wall-clock time after a device sync.
    clock = time.perf_counter if device.type == "cuda" else time.thread_time

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        for _ in range(inner):
            fn()
        sync()
        best = min(best, (clock() - start) / inner)
    return best


def _gae_torch_loop(gamma, lmbda, value, next_value, reward, done, terminated):
    # [B, T]: the textbook loop over time, vectorised over the batch.
    not_done = (~done).to(value.dtype)
    not_term = (~terminated).to(value.dtype)
    advantage = torch.empty_like(value)
    last = torch.zeros_like(value[:, 0])
    for t in range(value.shape[1] - 1, -1, -1):
        delta = reward[:, t] + gamma * not_term[:, t] * next_value[:, t] - value[:, t]
        last = delta + gamma * lmbda * not_done[:, t] * last
        advantage[:, t] = last
    return advantage, advantage + value


def _gae_numpy_loop(gamma, lmbda, value, next_value, reward, done, terminated):
    not_done = 1.0 - done.astype(value.dtype)
    delta = reward + gamma * (1.0 - terminated.astype(value.dtype)) * next_value - value
    decay = gamma * lmbda * not_done
    advantage = np.empty_like(value)
    last = np.zeros_like(value[:, 0])
    for t in range(value.shape[1] - 1, -1, -1):
        last = delta[:, t] + decay[:, t] * last
        advantage[:, t] = last
    return advantage, advantage + value


def bench_gae(device: torch.device, batch: int, steps: int, repeat: int) -> None:
    gen = torch.Generator().manual_seed(0)
    value, next_value, reward = (torch.randn(batch, steps, generator=gen) for _ in range(3))
    done = torch.rand(batch, steps, generator=gen) < 0.01
    terminated = done & (torch.rand(batch, steps, generator=gen) < 0.5)
    args = [x.to(device) for x in (value, next_value, reward, done, terminated)]
    nested = [x.unsqueeze(-1) for x in args]
    kernel_layout = [x.T.contiguous() for x in args]
    arrays = [x.numpy() for x in (value, next_value, reward, done, terminated)]

    compiled = ops.generalized_advantage_estimate(0.99, 0.95, *nested)[0].squeeze(-1)
    torch.testing.assert_close(compiled, _gae_torch_loop(0.99, 0.95, *args)[0])
    inner = 20 if device.type == "cuda" or batch * steps < 10**5 else 5
    times = {
        "rl_core.ops (compiled kernel)": _best_seconds(
            lambda: ops.generalized_advantage_estimate(0.99, 0.95, *nested), device, repeat, inner
        ),
        "plain torch loop over time": _best_seconds(
            lambda: _gae_torch_loop(0.99, 0.95, *args), device, repeat, 1
        ),
        "rl_core reference kernel": _best_seconds(
            lambda: reference.generalized_advantage_estimate(0.99, 0.95, *kernel_layout),
            device,
            repeat,
            1,
        ),
    }
    if device.type == "cpu":
        times["numpy loop over time"] = _best_seconds(
            lambda: _gae_numpy_loop(0.99, 0.95, *arrays), device, repeat, 1
        )
    ours = times["rl_core.ops (compiled kernel)"]
    print(f"GAE [{batch}, {steps}] float32 on {device}:")
    for name, seconds in times.items():
        ratio = "" if seconds is ours else f"  ({seconds / ours:.1f}x slower than compiled)"
        print(f"  {name:32s} {seconds * 1e3:9.3f} ms{ratio}")


def bench_prioritized(device: torch.device, items: int, batch: int, repeat: int) -> None:
    capacity = 1 << (items - 1).bit_length()  # the smallest power of two >= items
    gen = torch.Generator(device=device).manual_seed(0)
    alpha, beta = 0.6, 0.4
    tree_ops = torch.ops.rl_core  # the ops themselves (rl_buffers.trees wraps them)

    def fresh_trees():
        priorities = torch.rand(items, generator=gen, device=device) ** alpha
        index = torch.arange(items, device=device)
        sum_tree = torch.zeros(2 * capacity, device=device)
        min_tree = torch.full((2 * capacity,), float("inf"), device=device)
        tree_ops.sum_tree_update_(sum_tree, index, priorities)
        tree_ops.min_tree_update_(min_tree, index, priorities)
        return sum_tree, min_tree

    def iteration(sum_tree, min_tree, find, update_sum, update_min):
        total = sum_tree[1]  # the root: the sum of the leaves
        index = find(sum_tree, torch.rand(batch, generator=gen, device=device) * total)
        # (p / total) / (p_min / total) == p / p_min: the totals cancel.
        weight = (sum_tree[capacity + index] / min_tree[1]) ** -beta
        new_priority = torch.rand(batch, generator=gen, device=device) ** alpha
        update_sum(sum_tree, index, new_priority)
        update_min(min_tree, index, new_priority)
        return weight

    trees = fresh_trees()
    compiled = _best_seconds(
        lambda: iteration(
            *trees,
            tree_ops.sum_tree_find_prefixsum,
            tree_ops.sum_tree_update_,
            tree_ops.min_tree_update_,
        ),
        device,
        repeat,
        200,
    )
    trees = fresh_trees()
    baseline = _best_seconds(
        lambda: iteration(
            *trees,
            reference.sum_tree_find_prefixsum,
            reference.sum_tree_update_,
            reference.min_tree_update_,
        ),
        device,
        repeat,
        20,
    )

    # The fused ops rl-buffers' PrioritizedSampler calls: the draw with its weights in one
    # op, the raw priorities (checked, + eps, ** alpha, max tracked) into both trees in one.
    def fused_iteration(sum_tree, min_tree, top, sample, update):
        uniform = torch.rand(batch, generator=gen, device=device)
        index, weight = sample(sum_tree, min_tree, uniform, beta)
        priority = torch.rand(batch, generator=gen, device=device)
        update(sum_tree, min_tree, top, index, priority, 1e-8, alpha, items)
        return weight

    trees = fresh_trees()
    top = torch.ones((), device=device)
    fused = _best_seconds(
        lambda: fused_iteration(
            *trees,
            top,
            torch.ops.rl_core.sum_tree_sample,
            torch.ops.rl_core.sum_min_tree_priority_update_,
        ),
        device,
        repeat,
        200,
    )
    trees = fresh_trees()
    fused_baseline = _best_seconds(
        lambda: fused_iteration(
            *trees, top, reference.sum_tree_sample, reference.sum_min_tree_priority_update_
        ),
        device,
        repeat,
        20,
    )
    print(
        f"prioritized sample({batch}) + update({batch}) over {items} items on {device} "
        f"(through rl_core.ops, not rl-buffers):"
    )
    print("  basic ops: find_prefixsum, weights in torch, sum and min tree updates")
    print(f"    compiled kernels   {1 / compiled:10.0f} it/s  ({compiled * 1e6:.1f} us/it)")
    print(f"    reference kernels  {1 / baseline:10.0f} it/s  ({baseline / compiled:.1f}x slower)")
    print("  fused ops (rl-buffers' path): sum_tree_sample, sum_min_tree_priority_update_")
    print(f"    compiled kernels   {1 / fused:10.0f} it/s  ({fused * 1e6:.1f} us/it)")
    print(
        f"    reference kernels  {1 / fused_baseline:10.0f} it/s  "
        f"({fused_baseline / fused:.1f}x slower)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--items", type=int, default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    if not rl_kernels.loaded() or device.type not in rl_kernels.devices():
        raise SystemExit(f"rl-kernels has no {device.type} kernels here: {rl_kernels.load_error()}")
    if device.type == "cpu":
        torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    shapes = [(64, 1000), (1, 2048)] if device.type == "cpu" else [(4096, 1000)]
    for batch, steps in shapes:
        bench_gae(device, batch, steps, args.repeat)
    items = args.items or (200_000 if device.type == "cpu" else 2**20)
    bench_prioritized(device, items, 256, args.repeat)


if __name__ == "__main__":
    main()
