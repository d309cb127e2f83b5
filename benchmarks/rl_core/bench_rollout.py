"""Per-step overhead of ``EnvBase.rollout`` over a bare loop calling the same ``_step``.

Both loops draw a random action from the action spec every step, so the difference is what
rollout adds: done-flag completion, the trajectory writes into the preallocated buffer, the
done check and ``step_mdp``.

Times are CPU time of this process (``time.process_time``), the best of 5 runs, so other
work on the machine disturbs them less.

Run: ``uv run python benchmarks/rl_core/bench_rollout.py``
"""

import time

import torch

from rl_core.keys import ACTION
from rl_core.testing import CountingEnv
from rl_core.transforms import StepCounter, TransformedEnv

STEPS = 20_000


def bare_loop(env, steps: int) -> float:
    spec = env.action_spec
    td = env.reset()
    start = time.process_time()
    for _ in range(steps):
        td.set(ACTION, spec.rand())
        td = env._step(td)
    return time.process_time() - start


def rollout(env, steps: int) -> float:
    start = time.process_time()
    env.rollout(steps, break_when_any_done=False)
    return time.process_time() - start


def main() -> None:
    torch.set_num_threads(1)
    print(f"{'env':<36}{'bare µs/step':>14}{'rollout µs/step':>17}{'overhead µs':>13}{'ratio':>8}")
    cases = [
        ("CountingEnv()", lambda: CountingEnv(max_count=10**9)),
        ("CountingEnv(batch_size=[32])", lambda: CountingEnv(max_count=10**9, batch_size=[32])),
        (
            "TransformedEnv(.., StepCounter())",
            lambda: TransformedEnv(CountingEnv(max_count=10**9), StepCounter()),
        ),
    ]
    for name, make in cases:
        env = make()
        bare_loop(env, 500)
        rollout(env, 500)
        bare = min(bare_loop(env, STEPS) for _ in range(5)) / STEPS * 1e6
        roll = min(rollout(env, STEPS) for _ in range(5)) / STEPS * 1e6
        print(f"{name:<36}{bare:>14.1f}{roll:>17.1f}{roll - bare:>13.1f}{roll / bare:>8.2f}")


if __name__ == "__main__":
    main()
