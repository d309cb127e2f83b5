"""Batched envs against gymnasium's SyncVectorEnv, in env-steps per second, in one process run.

Cases (8 CartPoles unless said otherwise), each a rollout with random actions and automatic
resets (``break_when_any_done=False``) against ``gymnasium.vector.SyncVectorEnv`` of 8
``CartPole-v1`` stepping the same number of env-steps with ``action_space.sample()``:

- ``SerialEnv(8, GymEnv("CartPole-v1"))``
- ``ParallelEnv(2, SerialEnv(4, GymEnv("CartPole-v1")))``: 2 worker processes x 4 envs
- ``ParallelEnv(2, GymEnv("CartPole-v1", num_envs=4))``: the same with gymnasium vector envs
- the torch-native ``CartPoleEnv(batch_size=[1024])``: env-steps per second, vs SyncVectorEnv

Each batched case is measured twice: without a policy (random actions: the env's own loop,
``EnvBase._random_rollout``, runs it: a gymnasium loop, or for ParallelEnv one rollout inside
each worker) and with a policy that writes a fixed action (the step-by-step loop that every
policy takes: one TensorDict per step, and for ParallelEnv one round trip to the workers).

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


def sync_vector_env_run(steps: int) -> tuple[Callable[[], None], Callable[[], None]]:
    import gymnasium as gym

    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(8)])
    envs.reset(seed=0)
    envs.action_space.seed(0)

    def run() -> None:
        for _ in range(steps):
            envs.step(envs.action_space.sample())

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

    reference, close_reference = sync_vector_env_run(steps)
    ref = best_of(repeats, reference)
    ref_rate = 8 * steps / ref
    print(
        f"SyncVectorEnv(8 x CartPole-v1): {ref / steps * 1e6:8.1f} µs/step  {ref_rate:>12,.0f} env-steps/s"
    )

    cases = [
        ("SerialEnv(8, GymEnv)", lambda: SerialEnv(8, gym_cartpole)),
        ("ParallelEnv(2, SerialEnv(4, GymEnv))", lambda: ParallelEnv(2, serial_gym_4)),
        ("ParallelEnv(2, GymEnv(num_envs=4))", lambda: ParallelEnv(2, vector_gym_4)),
        ("SerialEnv(8, CartPoleEnv())", lambda: SerialEnv(8, CartPoleEnv)),
    ]
    for name, make in cases:
        env = make()
        try:
            # Re-measure the reference next to each case: the machine's load drifts.
            ref = min(ref, best_of(repeats, reference))
            elapsed = best_of(repeats, rollout_run(env, steps))
            with_policy = best_of(repeats, rollout_run(env, steps, fixed_action_policy(env)))
        finally:
            env.close()
        print(
            f"{name:<38}{elapsed / steps * 1e6:8.1f} µs/step  "
            f"{8 * steps / elapsed:>12,.0f} env-steps/s  ratio {elapsed / ref:5.2f}x"
        )
        print(
            f"{'  with a policy (step by step)':<38}{with_policy / steps * 1e6:8.1f} µs/step  "
            f"{8 * steps / with_policy:>12,.0f} env-steps/s  ratio {with_policy / ref:5.2f}x"
        )

    native = CartPoleEnv(batch_size=[1024])
    native_steps = max(steps // 4, 1)
    elapsed = best_of(repeats, rollout_run(native, native_steps))
    rate = 1024 * native_steps / elapsed
    ref_rate = 8 * steps / min(ref, best_of(repeats, reference))
    print(
        f"{'CartPoleEnv(batch_size=[1024])':<38}{elapsed / native_steps * 1e6:8.1f} µs/step  "
        f"{rate:>12,.0f} env-steps/s  {rate / ref_rate:5.1f}x the env-steps/s of SyncVectorEnv(8)"
    )
    close_reference()


if __name__ == "__main__":
    main()
