"""GymEnv rollouts against plain gymnasium loops stepping the same number of env-steps.

Two comparisons, each a ratio measured in this process (best of ``REPEATS`` runs, CPU time
of this process with ``time.process_time``, so other work on the machine disturbs it less):

1. ``GymEnv("CartPole-v1").rollout(20_000, break_when_any_done=False)`` against a gymnasium
   loop with random actions (``action_space.sample()``) that resets at the end of each episode.
2. ``GymEnv("CartPole-v1", num_envs=8).rollout(2_500, break_when_any_done=False)`` against a
   ``gymnasium.vector.SyncVectorEnv`` of 8 CartPoles (default NEXT_STEP autoreset) stepped
   2 500 times with ``action_space.sample()``: 20 000 env-steps each.

Without a policy, ``rollout`` hands the loop to the env (``EnvBase._random_rollout``): for
GymEnv, a gymnasium loop writing into numpy blocks. The third line repeats (1) with a policy
that writes a fixed action: the step-by-step loop that any policy takes (one TensorDict per
step).

Run: ``uv run python benchmarks/rl_envs/bench_gym.py``
"""

from __future__ import annotations

import time

import gymnasium as gym
import torch

from rl_envs.libs import GymEnv

STEPS = 20_000
NUM_ENVS = 8
REPEATS = 7


def raw_single(steps: int) -> float:
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.action_space.seed(0)
    start = time.process_time()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    elapsed = time.process_time() - start
    env.close()
    return elapsed


def wrapped_single(steps: int) -> float:
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    start = time.process_time()
    env.rollout(steps, break_when_any_done=False)
    elapsed = time.process_time() - start
    env.close()
    return elapsed


def wrapped_single_fixed_action(steps: int) -> float:
    """The single-env rollout with a policy that writes a fixed action (step by step)."""
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    action = torch.tensor([True, False])
    start = time.process_time()
    env.rollout(steps, lambda td: td.set("action", action), break_when_any_done=False)
    elapsed = time.process_time() - start
    env.close()
    return elapsed


def raw_vector(steps: int) -> float:
    env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * NUM_ENVS)
    env.reset(seed=0)
    env.action_space.seed(0)
    start = time.process_time()
    for _ in range(steps // NUM_ENVS):
        env.step(env.action_space.sample())
    elapsed = time.process_time() - start
    env.close()
    return elapsed


def wrapped_vector(steps: int) -> float:
    env = GymEnv("CartPole-v1", num_envs=NUM_ENVS)
    env.set_seed(0)
    start = time.process_time()
    env.rollout(steps // NUM_ENVS, break_when_any_done=False)
    elapsed = time.process_time() - start
    env.close()
    return elapsed


def compare(name: str, raw, wrapped) -> None:
    raw(STEPS // 10)
    wrapped(STEPS // 10)
    raws, wraps = [], []
    for _ in range(REPEATS):  # interleaved, so a busy spell hits both
        raws.append(raw(STEPS))
        wraps.append(wrapped(STEPS))
    best_raw, best_wrapped = min(raws), min(wraps)
    print(
        f"{name:<34}{best_raw / STEPS * 1e6:>10.1f}{best_wrapped / STEPS * 1e6:>12.1f}"
        f"{best_wrapped / best_raw:>8.2f}   (spread raw {max(raws) / best_raw:.2f}x, "
        f"wrapped {max(wraps) / best_wrapped:.2f}x)"
    )


def main() -> None:
    torch.set_num_threads(1)
    print(
        f"{'per env-step, best of ' + str(REPEATS):<34}{'raw µs':>10}{'GymEnv µs':>12}{'ratio':>8}"
    )
    compare("CartPole-v1, single env", raw_single, wrapped_single)
    compare(f"CartPole-v1, {NUM_ENVS} envs (sync)", raw_vector, wrapped_vector)
    print("with a policy (the step-by-step loop):")
    compare("  single env, fixed action", raw_single, wrapped_single_fixed_action)


if __name__ == "__main__":
    main()
