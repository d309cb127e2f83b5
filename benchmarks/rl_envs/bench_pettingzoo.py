"""Per-step cost of the PettingZoo wrappers against the raw PettingZoo loop.

The raw loop steps the PettingZoo env with fixed actions and resets it when the episode ends
(parallel: ``env.agents`` is empty; AEC: the PettingZoo ``agent_iter`` loop with dead steps).
The wrapped run is ``env.rollout(..., break_when_any_done=False)`` with a policy writing the
same fixed actions, so the difference is the wrapper (numpy -> tensors, TensorDicts, flags,
masks) plus rollout (``step_mdp``, the trajectory buffer, resets).

Times are CPU time of this process (``time.process_time``), the best of 5 runs.

Run: ``uv run python benchmarks/rl_envs/bench_pettingzoo.py``
"""

import time
import warnings

import pettingzoo
import torch
from mpe2 import simple_spread_v3

from rl_envs.libs import PettingZooWrapper

STEPS = 3_000


def raw_parallel(env, steps: int) -> float:
    actions = dict.fromkeys(env.possible_agents, 1)
    env.reset(seed=0)
    start = time.process_time()
    for _ in range(steps):
        env.step({a: actions[a] for a in env.agents})
        if not env.agents:
            env.reset()
    return time.process_time() - start


def raw_aec(env, steps: int) -> float:
    env.reset(seed=0)
    start = time.process_time()
    taken = 0
    while taken < steps:
        for agent in env.agent_iter():
            _, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            mask = env.observe(agent)["action_mask"]
            env.step(int(mask.argmax()))
            taken += 1
            if taken == steps:
                break
        env.reset()
    return time.process_time() - start


def wrapped(env, steps: int) -> float:
    def policy(td):
        if ("agents", "action_mask") in td.keys(True, True):
            return td.set(("agents", "action"), td["agents", "action_mask"].int().argmax(-1))
        return td.set(
            ("agents", "action"), torch.ones(len(env.group_map["agents"]), dtype=torch.long)
        )

    start = time.process_time()
    env.rollout(steps, policy, break_when_any_done=False)
    return time.process_time() - start


def main() -> None:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    cases = [
        (
            "simple_spread_v3 N=3 (parallel)",
            lambda: simple_spread_v3.parallel_env(N=3, max_cycles=25),
            raw_parallel,
        ),
        (
            "knights_archers_zombies_v11 (parallel)",
            lambda: pettingzoo.make("parallel", "butterfly/knights_archers_zombies_v11"),
            raw_parallel,
        ),
        ("tictactoe_v3 (AEC)", lambda: pettingzoo.make("aec", "classic/tictactoe_v3"), raw_aec),
    ]
    print(f"{'task':<42}{'raw µs/step':>13}{'wrapped µs/step':>17}{'ratio':>8}")
    for name, make, raw_loop in cases:
        raw_env, env = make(), PettingZooWrapper(make(), seed=0)
        raw_loop(raw_env, 200)
        wrapped(env, 200)
        raw = min(raw_loop(raw_env, STEPS) for _ in range(5)) / STEPS * 1e6
        wrap = min(wrapped(env, STEPS) for _ in range(5)) / STEPS * 1e6
        print(f"{name:<42}{raw:>13.1f}{wrap:>17.1f}{wrap / raw:>8.2f}")


if __name__ == "__main__":
    main()
