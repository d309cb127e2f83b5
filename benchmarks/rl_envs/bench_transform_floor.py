"""Where the time of a transformed CartPole step goes: the catalogue against a floor.

``bench_transforms.py`` gives the ratio of ``TransformedEnv(GymEnv("CartPole-v1"),
Compose(ObservationNorm, RewardSum, StepCounter))`` to the bare env. This script splits one
``step_and_maybe_reset`` call (the call a policy rollout makes per step) into steps that end no
episode ("plain") and steps that end one (the fused reset runs too), median over
``STEPS`` steps, for four envs stepped by a fixed action:

1. the bare ``GymEnv``;
2. ``TransformedEnv`` with an empty ``Compose`` (the wrapper alone);
3. the three catalogue transforms;
4. "floor": the wrapper with one transform that does only three torch ops per step (an
   ``addcmul`` of the observation, the reward sum, the count), written with ``set_leaf``,
   no key handling, no checks. It is not a usable transform (its reset writes the zeros
   the same way). It was the lower bound of the catalogue while the catalogue computed
   with torch ops; the catalogue now runs on numpy rows (``rl_core.transforms._lane``) and
   is below it, and the line says what the torch calls it avoids cost.

Medians of wall-clock times (``time.perf_counter``) of single calls on a shared machine: use
the differences between lines, not the absolute figures.

Run: ``uv run python benchmarks/rl_envs/bench_transform_floor.py``
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from rl_core import Compose, EnvBase, RewardSum, StepCounter, Transform, TransformedEnv
from rl_core.fast_td import entries, set_leaf
from rl_envs import GymEnv, ObservationNorm

STEPS = 5_000
ROUNDS = 2


class _ThreeOps(Transform):
    """The floor: the catalogue's three per-step ops on root-level entries, nothing else."""

    fusable = True

    def __init__(self) -> None:
        super().__init__()
        self.weight, self.bias = torch.ones(4), torch.zeros(4)
        self.one = torch.ones(1, dtype=torch.int64)

    def transform_output_spec(self, output_spec):
        # The catalogue's specs (the sum and the count), so both envs show the same entries.
        output_spec = RewardSum().transform_output_spec(output_spec)
        return StepCounter().transform_output_spec(output_spec)

    def transform_input_spec(self, input_spec):
        return StepCounter().transform_input_spec(input_spec)

    def _reset(self, tensordict, tensordict_reset):
        set_leaf(
            tensordict_reset,
            "observation",
            torch.addcmul(self.bias, entries(tensordict_reset)["observation"], self.weight),
        )
        set_leaf(tensordict_reset, "episode_reward", torch.zeros(1))
        set_leaf(tensordict_reset, "step_count", torch.zeros(1, dtype=torch.int64))
        return tensordict_reset

    def _step(self, tensordict, next_tensordict):
        root, nxt = entries(tensordict), entries(next_tensordict)
        set_leaf(
            next_tensordict,
            "observation",
            torch.addcmul(self.bias, nxt["observation"], self.weight),
        )
        set_leaf(
            next_tensordict, "episode_reward", torch.add(root["episode_reward"], nxt["reward"])
        )
        set_leaf(next_tensordict, "step_count", torch.add(root["step_count"], self.one))
        return next_tensordict


def bare() -> EnvBase:
    return GymEnv("CartPole-v1")


def empty() -> EnvBase:
    return TransformedEnv(GymEnv("CartPole-v1"), Compose())


def catalogue() -> EnvBase:
    norm = ObservationNorm(loc=torch.zeros(4), scale=torch.ones(4), standard_normal=True)
    return TransformedEnv(GymEnv("CartPole-v1"), Compose(norm, RewardSum(), StepCounter()))


def floor() -> EnvBase:
    return TransformedEnv(GymEnv("CartPole-v1"), _ThreeOps())


def medians(make: Callable[[], EnvBase]) -> tuple[float, float, float]:
    """(plain step, step with a reset, the share of steps with a reset)."""
    env = make()
    env.set_seed(0)
    action = env.action_spec.rand()
    td = env.reset()
    plain, reset = [], []
    for _ in range(STEPS):
        td.set("action", action)
        start = time.perf_counter()
        td, next_root = env.step_and_maybe_reset(td)
        elapsed = time.perf_counter() - start
        (reset if bool(td["next", "done"]) else plain).append(elapsed)
        td = next_root
    env.close()
    plain.sort()
    reset.sort()
    return plain[len(plain) // 2], reset[len(reset) // 2], len(reset) / STEPS


def main() -> None:
    torch.set_num_threads(1)
    for _ in range(ROUNDS):
        for make in (bare, empty, catalogue, floor):
            p, r, share = medians(make)
            amortized = p * (1 - share) + r * share
            print(
                f"{make.__name__:<10} plain {p * 1e6:6.1f} us   with reset {r * 1e6:6.1f} us   "
                f"per step {amortized * 1e6:6.1f} us"
            )


if __name__ == "__main__":
    main()
