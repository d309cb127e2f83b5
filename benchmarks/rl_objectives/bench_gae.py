"""``generalized_advantage_estimate`` against a plain torch loop over time, same process.

Run from the repository root::

    uv run python benchmarks/rl_objectives/bench_gae.py [--repeat 15]

For each shape ``[B, T]`` (inputs ``[B, T, 1]``, time at dim -2, 1% episode ends, half of
them truncations) it prints the best-of-``--repeat`` time of: the plain loop (what a user
writes by hand), ``rl_objectives.value.functional.generalized_advantage_estimate`` (the
``rl_core`` op; without rl-kernels its reference kernel runs), and TorchRL's fast-path name
``vec_generalized_advantage_estimate`` (the same op since issue 43; it was an O(T^2) matrix
product, 22x slower than the loop on ``[64, 1000]``); and the ratios to the loop (< 1 is
faster). The results are checked equal to the loop's first.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from rl_objectives.value.functional import (
    generalized_advantage_estimate,
    vec_generalized_advantage_estimate,
)

SHAPES = [(64, 1000), (1, 2048), (1024, 128)]


def loop_gae(gamma, lmbda, value, next_value, reward, done, terminated):
    """GAE by hand: ``[B, T, 1]`` inputs, a Python loop over time."""
    not_terminated = (~terminated).to(reward.dtype)
    not_done = (~done).to(reward.dtype)
    delta = reward + gamma * not_terminated * next_value - value
    advantage = torch.empty_like(delta)
    running = torch.zeros_like(delta[:, 0])
    for t in range(delta.shape[1] - 1, -1, -1):
        running = delta[:, t] + gamma * lmbda * not_done[:, t] * running
        advantage[:, t] = running
    return advantage, advantage + value


def best_s(fn: Callable[[], object], repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, best of {args.repeat}")
    print(
        f"{'shape':>12} {'loop ms':>9} {'gae ms':>9} {'vec ms':>9} {'gae/loop':>9} {'vec/loop':>9}"
    )
    for batch, steps in SHAPES:
        gen = torch.Generator().manual_seed(0)
        value, next_value, reward = (torch.randn(batch, steps, 1, generator=gen) for _ in range(3))
        done = torch.rand(batch, steps, 1, generator=gen) < 0.01
        terminated = done & (torch.rand(batch, steps, 1, generator=gen) < 0.5)
        inputs = (0.99, 0.95, value, next_value, reward, done, terminated)
        ref = loop_gae(*inputs)[0]
        ours = generalized_advantage_estimate(*inputs)[0]
        vec = vec_generalized_advantage_estimate(*inputs)[0]
        torch.testing.assert_close(ours, ref, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(vec, ref, rtol=1e-4, atol=1e-4)
        t_loop = best_s(lambda inputs=inputs: loop_gae(*inputs), args.repeat)
        t_gae = best_s(lambda inputs=inputs: generalized_advantage_estimate(*inputs), args.repeat)
        t_vec = best_s(
            lambda inputs=inputs: vec_generalized_advantage_estimate(*inputs), args.repeat
        )
        print(
            f"{f'[{batch}, {steps}]':>12} {t_loop * 1e3:9.2f} {t_gae * 1e3:9.2f} "
            f"{t_vec * 1e3:9.2f} {t_gae / t_loop:9.2f} {t_vec / t_loop:9.2f}"
        )


if __name__ == "__main__":
    main()
