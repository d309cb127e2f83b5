"""TorchRL's transforms on the CartPole workload of ``benchmarks/rl_envs/bench_transforms.py``.

``TransformedEnv(GymEnv("CartPole-v1"), Compose(ObservationNorm, RewardSum, StepCounter))``
against the bare ``GymEnv("CartPole-v1")``, both stepped by ``rollout`` with a policy writing
one fixed action and ``break_when_any_done=False``: best of ``REPEATS`` runs each, CPU time
of this process, the runs of the two envs alternating, one torch thread. The same settings
and the same figures as the first row of ``bench_transforms.py``, so the two ratios (and the
absolute step costs) compare TorchRL with this workspace on the same machine.

Run from the repository root::

    uv run --project benchmarks/torchrl_reference python benchmarks/torchrl_reference/bench_transforms.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
import torchrl
from torchrl.envs import Compose, GymEnv, ObservationNorm, RewardSum, StepCounter, TransformedEnv

STEPS = 5_000
REPEATS = 5


def cartpole() -> GymEnv:
    return GymEnv("CartPole-v1")


def cartpole_transformed() -> TransformedEnv:
    norm = ObservationNorm(
        loc=torch.zeros(4), scale=torch.ones(4), standard_normal=True, in_keys=["observation"]
    )
    return TransformedEnv(GymEnv("CartPole-v1"), Compose(norm, RewardSum(), StepCounter()))


def timed(make: Callable[[], GymEnv | TransformedEnv]) -> float:
    env = make()
    env.set_seed(0)
    torch.manual_seed(0)
    action = env.action_spec.rand()  # one fixed valid action (one-hot)

    def policy(td):
        return td.set("action", action)

    env.rollout(10, policy, break_when_any_done=False)  # warm-up
    start = time.process_time()
    env.rollout(STEPS, policy, break_when_any_done=False)
    elapsed = time.process_time() - start
    env.close()
    return elapsed / STEPS


def main() -> None:
    torch.set_num_threads(1)
    bare, transformed = [], []
    for _ in range(REPEATS):
        bare.append(timed(cartpole))
        transformed.append(timed(cartpole_transformed))
    ref, ours = min(bare), min(transformed)
    print(f"torchrl {torchrl.__version__}, torch {torch.__version__}, 1 thread")
    print(
        f"CartPole + (ObservationNorm, RewardSum, StepCounter), policy: bare {ref * 1e6:.1f} "
        f"us/step, transformed {ours * 1e6:.1f} us/step, ratio {ours / ref:.2f}x"
    )


if __name__ == "__main__":
    main()
