"""GymEnv rollouts against plain gymnasium loops stepping the same number of env-steps.

Each comparison is a ratio measured in this process (best of ``REPEATS`` runs, CPU time of
this process with ``time.process_time``, so other work on the machine disturbs it less), and
both sides draw their actions the same way:

1. No policy: ``GymEnv("CartPole-v1").rollout(20_000, break_when_any_done=False)`` (the env's
   own loop, its step plan's ``StepPlan.random_rollout``) against a gymnasium loop that resets at the end of
   each episode. Both draw random actions ``CHUNK`` (256) at a time inside the timed loop
   (ours from the action spec, the reference from the action space's generator).
2. The same with ``num_envs=8`` against a ``gymnasium.vector.SyncVectorEnv`` of 8 CartPoles
   (NEXT_STEP autoreset) stepped 2 500 times: 20 000 env-steps each.
3. With a policy: ``rollout`` with a policy writing one fixed action (the step-by-step loop
   every policy takes, one TensorDict per step) against the gymnasium loop stepping the same
   fixed action (single env and 8 envs).

The last lines measure the action checks (``ValueError`` on an invalid action) of one step:
the encoder of a ``Discrete`` action with and without the checks, per call, and that
difference as a share of the with-policy step.

Run: ``uv run python benchmarks/rl_envs/bench_gym.py``
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import torch

from rl_envs.libs import GymEnv

STEPS = 20_000
NUM_ENVS = 8
REPEATS = 7
CHUNK = 256  # random actions drawn at once, as GymEnv's own loop does
FIXED = 1  # the fixed action of the with-policy rows


def raw_single(steps: int, *, fixed: bool = False) -> float:
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    rng = env.action_space.np_random
    n = int(env.action_space.n)
    actions = iter(())
    start = time.process_time()
    for _ in range(steps):
        if fixed:
            action = FIXED
        else:
            action = next(actions, None)
            if action is None:
                actions = iter(rng.integers(0, n, size=CHUNK))
                action = next(actions)
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    elapsed = time.process_time() - start
    env.close()
    return elapsed


def raw_single_fixed_action(steps: int) -> float:
    return raw_single(steps, fixed=True)


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
    action = env.action_spec.encode(FIXED)
    start = time.process_time()
    env.rollout(steps, lambda td: td.set("action", action), break_when_any_done=False)
    elapsed = time.process_time() - start
    env.close()
    return elapsed


def raw_vector(steps: int, *, fixed: bool = False) -> float:
    env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * NUM_ENVS)
    env.reset(seed=0)
    rng = env.action_space.np_random
    chunks = iter(())
    fixed_actions = np.full(NUM_ENVS, FIXED)
    start = time.process_time()
    for _ in range(steps // NUM_ENVS):
        if fixed:
            action = fixed_actions
        else:
            action = next(chunks, None)
            if action is None:
                chunks = iter(rng.integers(0, 2, size=(CHUNK, NUM_ENVS)))
                action = next(chunks)
        env.step(action)
    elapsed = time.process_time() - start
    env.close()
    return elapsed


def raw_vector_fixed_action(steps: int) -> float:
    return raw_vector(steps, fixed=True)


def wrapped_vector(steps: int) -> float:
    env = GymEnv("CartPole-v1", num_envs=NUM_ENVS)
    env.set_seed(0)
    start = time.process_time()
    env.rollout(steps // NUM_ENVS, break_when_any_done=False)
    elapsed = time.process_time() - start
    env.close()
    return elapsed


def wrapped_vector_fixed_action(steps: int) -> float:
    env = GymEnv("CartPole-v1", num_envs=NUM_ENVS)
    env.set_seed(0)
    action = env.action_spec.encode(np.full(NUM_ENVS, FIXED))
    start = time.process_time()
    env.rollout(steps // NUM_ENVS, lambda td: td.set("action", action), break_when_any_done=False)
    elapsed = time.process_time() - start
    env.close()
    return elapsed


def action_check_cost(single_step: float, vector_env_step: float) -> None:
    """µs per action encode with and without the checks, for one and for 8 Discrete envs,
    against the with-policy step (``single_step`` s; ``vector_env_step`` s per env-step)."""
    from rl_core.specs import OneHot
    from rl_envs.libs._gym_codecs import make_encoder

    calls = 20_000
    for batch in ((), (NUM_ENVS,)):
        spec = OneHot(2, shape=(*batch, 2), dtype=torch.int64)
        value = spec.rand()
        space = gym.spaces.Discrete(2)
        timings = []
        for who in (None, "bench"):
            encode = make_encoder(space, spec, batch, who=who)
            best = float("inf")
            for _ in range(REPEATS):
                start = time.process_time()
                for _ in range(calls):
                    encode(value)
                best = min(best, time.process_time() - start)
            timings.append(best / calls * 1e6)
        cost = timings[1] - timings[0]
        envs = batch[0] if batch else 1
        step_us = (vector_env_step * envs if batch else single_step) * 1e6
        share = cost / step_us * 100
        print(
            f"  action checks, {envs} env(s): encode {timings[0]:.2f} -> {timings[1]:.2f} µs "
            f"(+{cost:.2f} µs, {share:.1f} % of the with-policy step)"
        )


def compare(name: str, raw, wrapped) -> float:
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
    return best_wrapped / STEPS


def main() -> None:
    torch.set_num_threads(1)
    print(
        f"{'per env-step, best of ' + str(REPEATS):<34}{'raw µs':>10}{'GymEnv µs':>12}{'ratio':>8}"
    )
    print(f"no policy (both draw random actions {CHUNK} at a time):")
    compare("  CartPole-v1, single env", raw_single, wrapped_single)
    compare(f"  CartPole-v1, {NUM_ENVS} envs (sync)", raw_vector, wrapped_vector)
    print("with a policy (both step one fixed action; ours step by step):")
    single = compare("  single env", raw_single_fixed_action, wrapped_single_fixed_action)
    vector = compare(
        f"  {NUM_ENVS} envs (sync)", raw_vector_fixed_action, wrapped_vector_fixed_action
    )
    action_check_cost(single, vector)


if __name__ == "__main__":
    main()
