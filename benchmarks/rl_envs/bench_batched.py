"""Batched envs against gymnasium's SyncVectorEnv and AsyncVectorEnv, in one process run.

Cases (8 CartPoles unless said otherwise), each a rollout with automatic resets
(``break_when_any_done=False``), against ``gymnasium.vector.SyncVectorEnv`` of 8
``CartPole-v1`` stepping the same number of env-steps (and, for ``ParallelEnv``, against
``gymnasium.vector.AsyncVectorEnv`` of 8, one process per sub-env):

- ``SerialEnv(8, GymEnv("CartPole-v1"))``
- ``ParallelEnv(2, SerialEnv(4, GymEnv("CartPole-v1")))``: 2 worker processes x 4 envs
- ``ParallelEnv(2, GymEnv("CartPole-v1", num_envs=4))``: the same with gymnasium vector envs
- the torch-native ``CartPoleEnv(batch_size=[1024])``: env-steps per second, vs SyncVectorEnv

Each batched case is measured twice, each time against references drawing actions the same
way: without a policy (random actions: the env's own loop, ``StepPlan.random_rollout``; ours
and the references draw random actions 256 steps at a time) and with a policy that writes a
fixed action (the step-by-step loop that every policy takes: one TensorDict per step, and for
ParallelEnv one round trip to the workers; the references step the same fixed action).

Times are wall-clock (``time.perf_counter``: worker processes work while the parent waits),
best of ``--repeats`` runs. The machine is shared: compare ratios from the same run.

Run: ``uv run python benchmarks/rl_envs/bench_batched.py``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from rl_envs.batched import ParallelEnv, SerialEnv
from rl_envs.native import CartPoleEnv


def best_of(repeats: int, run: Callable[[], None]) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


CHUNK = 256  # random actions drawn at once, as the envs' own loops do
NUM_ENVS = 8


def vector_env_run(
    steps: int, *, asynchronous: bool = False, fixed: bool = False
) -> tuple[Callable[[], None], Callable[[], None]]:
    """A gymnasium vector env of 8 CartPoles stepping random (chunked) or fixed actions."""
    import gymnasium as gym
    import numpy as np

    kind = gym.vector.AsyncVectorEnv if asynchronous else gym.vector.SyncVectorEnv
    envs = kind([lambda: gym.make("CartPole-v1") for _ in range(NUM_ENVS)])
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    fixed_action = np.ones(NUM_ENVS, dtype=np.int64)

    def run() -> None:
        chunk = None
        for t in range(steps):
            if fixed:
                action = fixed_action
            else:
                if t % CHUNK == 0:
                    chunk = rng.integers(0, 2, size=(CHUNK, NUM_ENVS))
                action = chunk[t % CHUNK]
            envs.step(action)

    return run, envs.close


def rollout_run(env, steps: int, policy=None) -> Callable[[], None]:
    env.set_seed(0)

    def run() -> None:
        env.rollout(steps, policy, break_when_any_done=False)

    return run


def fixed_action_policy(env) -> Callable:
    """A policy writing one fixed (random) action: the rollout takes the step-by-step loop
    that any policy takes, instead of the env's own loop for random actions."""
    action = env.action_spec.rand()

    def policy(td):
        return td.set("action", action)

    return policy


def gym_cartpole(num_envs: int = 0):
    from rl_envs.libs import GymEnv

    return GymEnv("CartPole-v1", num_envs=num_envs)


def serial_gym_4() -> SerialEnv:
    return SerialEnv(4, gym_cartpole)


def vector_gym_4():
    return gym_cartpole(4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2_000, help="vector steps per run")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    steps, repeats = args.steps, args.repeats

    references = {}
    closers = []
    for name, kwargs in [
        ("SyncVectorEnv", {}),
        ("SyncVectorEnv, fixed action", {"fixed": True}),
        ("AsyncVectorEnv", {"asynchronous": True}),
        ("AsyncVectorEnv, fixed action", {"asynchronous": True, "fixed": True}),
    ]:
        run, close = vector_env_run(steps, **kwargs)
        closers.append(close)
        references[name] = [run, best_of(repeats, run)]
        best = references[name][1]
        print(
            f"{name + ' (8 x CartPole-v1)':<38}{best / steps * 1e6:8.1f} µs/step  "
            f"{NUM_ENVS * steps / best:>12,.0f} env-steps/s"
        )

    def reference(name: str) -> float:
        # Re-measured next to each case: the machine's load drifts.
        run, best = references[name]
        references[name][1] = min(best, best_of(repeats, run))
        return references[name][1]

    cases = [
        ("SerialEnv(8, GymEnv)", lambda: SerialEnv(8, gym_cartpole), False),
        ("ParallelEnv(2, SerialEnv(4, GymEnv))", lambda: ParallelEnv(2, serial_gym_4), True),
        ("ParallelEnv(2, GymEnv(num_envs=4))", lambda: ParallelEnv(2, vector_gym_4), True),
        ("SerialEnv(8, CartPoleEnv())", lambda: SerialEnv(8, CartPoleEnv), False),
    ]
    for name, make, parallel in cases:
        env = make()
        try:
            rows = [
                (name, "", best_of(repeats, rollout_run(env, steps))),
                (
                    "  with a policy (step by step)",
                    ", fixed action",
                    best_of(repeats, rollout_run(env, steps, fixed_action_policy(env))),
                ),
            ]
        finally:
            env.close()
        for label, suffix, elapsed in rows:
            line = (
                f"{label:<38}{elapsed / steps * 1e6:8.1f} µs/step  "
                f"{NUM_ENVS * steps / elapsed:>12,.0f} env-steps/s  "
                f"ratio {elapsed / reference('SyncVectorEnv' + suffix):5.2f}x Sync"
            )
            if parallel:
                line += f", {elapsed / reference('AsyncVectorEnv' + suffix):5.2f}x Async"
            print(line)

    native = CartPoleEnv(batch_size=[1024])
    native_steps = max(steps // 4, 1)
    elapsed = best_of(repeats, rollout_run(native, native_steps))
    rate = 1024 * native_steps / elapsed
    ref_rate = NUM_ENVS * steps / reference("SyncVectorEnv")
    print(
        f"{'CartPoleEnv(batch_size=[1024])':<38}{elapsed / native_steps * 1e6:8.1f} µs/step  "
        f"{rate:>12,.0f} env-steps/s  {rate / ref_rate:5.1f}x the env-steps/s of SyncVectorEnv(8)"
    )
    for close in closers:
        close()


if __name__ == "__main__":
    main()
