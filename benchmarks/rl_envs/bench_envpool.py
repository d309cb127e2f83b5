"""MultiThreadedEnv (EnvPool) against GymEnv(num_envs=N) on CartPole-v1, N = 8 and 64.

For each N, three rollouts of ``--steps`` steps with automatic resets
(``break_when_any_done=False``), stepped by a policy writing a fixed action (the loop every
policy takes: one TensorDict per step):

- ``MultiThreadedEnv(N, "CartPole-v1")``: EnvPool's C++ thread pool behind the wrapper;
- ``GymEnv("CartPole-v1", num_envs=N)``: gymnasium's SyncVectorEnv behind the wrapper;
- EnvPool's own loop (``pool.step(actions)`` on numpy, no TensorDict), for reference.

Figures are env-steps per second (N x steps / wall-clock seconds), best of ``--repeats``
runs. The machine is shared: compare ratios from the same run.

Run: ``uv run python benchmarks/rl_envs/bench_envpool.py``
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch

from rl_envs import GymEnv, MultiThreadedEnv


def best_of(repeats: int, run: Callable[[], None]) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def fixed_action(n: int, one_hot: bool) -> Callable:
    action = torch.zeros(n, 2, dtype=torch.int64) if one_hot else torch.zeros(n, dtype=torch.int64)
    if one_hot:
        action[:, 1] = 1

    def policy(td):
        return td.set("action", action)

    return policy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import envpool

    print(f"{'N':>3} | {'MultiThreadedEnv':>16} | {'GymEnv(num_envs)':>16} | ratio | EnvPool loop")
    for n in (8, 64):
        pool_env = MultiThreadedEnv(n, "CartPole-v1", categorical_action_encoding=True)
        gym_env = GymEnv("CartPole-v1", num_envs=n, categorical_action_encoding=True)
        raw = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n, seed=0)
        policy = fixed_action(n, one_hot=False)
        actions = np.ones(n, dtype=np.int64)

        def raw_loop(raw=raw, actions=actions):
            raw.reset()
            for _ in range(args.steps):
                raw.step(actions)

        t_pool = best_of(
            args.repeats,
            lambda e=pool_env, p=policy: e.rollout(args.steps, p, break_when_any_done=False),
        )
        t_gym = best_of(
            args.repeats,
            lambda e=gym_env, p=policy: e.rollout(args.steps, p, break_when_any_done=False),
        )
        t_raw = best_of(args.repeats, raw_loop)
        rate = n * args.steps
        print(
            f"{n:>3} | {rate / t_pool:>12,.0f} /s | {rate / t_gym:>12,.0f} /s | "
            f"{t_gym / t_pool:>4.1f}x | {rate / t_raw:>10,.0f} /s"
        )
        pool_env.close()
        gym_env.close()
        raw.close()


if __name__ == "__main__":
    main()
