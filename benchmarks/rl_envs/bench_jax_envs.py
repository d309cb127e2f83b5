"""BraxEnv and JumanjiEnv at batch 1,024 against the library's own jitted loop (JAX CPU backend).

For each env, ``--steps`` steps of 1,024 sub-envs stepping a fixed action:

- the wrapper: ``env.rollout(steps, policy, break_when_any_done=False)`` (one TensorDict
  per step; outputs cross to torch through DLPack, the action to JAX the same way; finished
  sub-envs reset through the ``"_reset"`` mask);
- the library's loop: ``jax.jit(jax.vmap(env.step))`` called in a Python loop on the JAX
  state, blocking on the last state (Brax and Jumanji envs do not reset themselves, so it
  never resets).

Both are compiled before timing. Figures are env-steps per second (1,024 x steps /
wall-clock seconds), best of ``--repeats``. The machine is shared: compare ratios from the
same run.

Run: ``uv run python benchmarks/rl_envs/bench_jax_envs.py``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from rl_envs import BraxEnv, JumanjiEnv

BATCH = 1024


def best_of(repeats: int, run: Callable[[], None]) -> float:
    run()  # warm-up (and compilation)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(name: str, env, raw_env, action: torch.Tensor, steps: int, repeats: int) -> None:
    import jax

    def policy(td):
        return td.set("action", action)

    t_ours = best_of(repeats, lambda: env.rollout(steps, policy, break_when_any_done=False))
    reset = jax.jit(jax.vmap(raw_env.reset))
    step = jax.jit(jax.vmap(raw_env.step))
    keys = jax.random.split(jax.random.PRNGKey(0), BATCH)
    jax_action = jax.numpy.asarray(action.numpy())

    def raw_loop():
        state = reset(keys)
        if isinstance(state, tuple):  # Jumanji: (state, timestep)
            state = state[0]
            for _ in range(steps):
                state, _ = step(state, jax_action)
        else:
            for _ in range(steps):
                state = step(state, jax_action)
        jax.block_until_ready(state)

    t_raw = best_of(repeats, raw_loop)
    rate = BATCH * steps
    print(
        f"{name:<22} | {rate / t_ours:>12,.0f} /s | {rate / t_raw:>12,.0f} /s | "
        f"{t_ours / t_raw:>5.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'env (batch 1,024)':<22} | {'wrapper':>15} | {'jitted loop':>15} | slowdown")
    brax = BraxEnv("fast", batch_size=[BATCH], seed=0)
    measure("BraxEnv('fast')", brax, brax.env, torch.zeros(BATCH, 1), args.steps, args.repeats)
    jumanji = JumanjiEnv("Game2048-v1", batch_size=[BATCH], seed=0)
    action = torch.zeros(BATCH, dtype=torch.int32)
    measure("JumanjiEnv('Game2048')", jumanji, jumanji.env, action, args.steps, args.repeats)


if __name__ == "__main__":
    main()
