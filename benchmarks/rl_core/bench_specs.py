"""Micro-benchmark of the spec methods an env calls every step.

Run with ``uv run python benchmarks/rl_core/bench_specs.py``; prints microseconds per call
(best of five repeats of a ``time.perf_counter`` loop).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from rl_core.specs import Bounded, Categorical, Composite, OneHot, Unbounded


def per_call_us(fn: Callable[[], object], n: int = 20_000, repeats: int = 5) -> float:
    for _ in range(min(n, 1000)):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


def env_spec() -> Composite:
    """A CartPole-like step: observation, action, and the "next" entries."""
    return Composite(
        observation=Bounded(-4.8, 4.8, shape=(4,)),
        action=OneHot(2),
        done=Unbounded(shape=(1,), dtype=torch.bool),
        terminated=Unbounded(shape=(1,), dtype=torch.bool),
        next=Composite(
            observation=Bounded(-4.8, 4.8, shape=(4,)),
            reward=Unbounded(shape=(1,)),
            done=Unbounded(shape=(1,), dtype=torch.bool),
            terminated=Unbounded(shape=(1,), dtype=torch.bool),
        ),
    )


def main() -> None:
    torch.set_num_threads(1)
    bounded = Bounded(-1.0, 1.0, shape=(3,))
    obs64 = np.zeros(3)
    obs32 = np.zeros(3, dtype=np.float32)
    spec = env_spec()
    td = spec.rand()
    value = bounded.rand()
    categorical = Categorical(4)
    rows = [
        (
            "torch.as_tensor(np float64, dtype=float32) [baseline]",
            lambda: torch.as_tensor(obs64, dtype=torch.float32),
        ),
        ("Bounded.encode(np float64 array)", lambda: bounded.encode(obs64)),
        ("Bounded.encode(np float32 array)", lambda: bounded.encode(obs32)),
        ("Categorical.encode(python int)", lambda: categorical.encode(2)),
        ("Bounded.rand()", bounded.rand),
        ("Bounded.zero()", bounded.zero),
        ("Bounded.is_in(tensor)", lambda: bounded.is_in(value)),
        ("Composite.zero() [9 leaves]", spec.zero),
        ("Composite.rand() [9 leaves]", spec.rand),
        ("Composite.is_in(td) [9 leaves]", lambda: spec.is_in(td)),
    ]
    print(f"torch {torch.__version__}, 1 thread")
    for name, fn in rows:
        n = 2_000 if name.startswith("Composite") else 20_000
        print(f"{name:55s} {per_call_us(fn, n):8.2f} us/call")


if __name__ == "__main__":
    main()
