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
   with torch ops; the catalogue now runs on numpy rows (``rl_core._accel.lane``) and
   is below it, and the line says what the torch calls it avoids cost.
5. "handwritten": the catalogue's three transforms written out by hand on the numpy rows
   of ``GymEnv``'s step (no plan, lookup or check: fixed keys, shapes and dtypes), inside
   the layers the bare env's ``step_and_maybe_reset`` runs too (``GymWrapper``'s fused
   step-and-reset, ``_write_step``, the ``step_mdp`` plan, the wrapper's reset). It is
   not a usable env (it reads ``GymEnv``'s private row blocks); it bounds what any
   generic path can reach like for like. The script first checks that it gives the
   catalogue's trajectory, and stops otherwise.

Then the policy-loop ratio of ``bench_transforms.py`` (``rollout`` with a fixed action, best
of ``ROLLOUTS`` runs of each env, the runs alternating) for the catalogue and the
hand-written step.

Medians of wall-clock times (``time.perf_counter``) of single calls on a shared machine: use
the differences between lines, not the absolute figures.

Run: ``uv run python benchmarks/rl_envs/bench_transform_floor.py``
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch
from tensordict import TensorDictBase

from rl_core import Compose, EnvBase, StepCounter, Transform, TransformedEnv
from rl_core._accel.rows import Rows
from rl_core._accel.td_access import entries_view, set_leaf
from rl_envs import GymEnv, ObservationNorm
from rl_envs.transforms import RewardSum

STEPS = 5_000
ROUNDS = 2
ROLLOUTS = 8
ROLLOUT_STEPS = 3_000


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
            torch.addcmul(self.bias, entries_view(tensordict_reset)["observation"], self.weight),
        )
        set_leaf(tensordict_reset, "episode_reward", torch.zeros(1))
        set_leaf(tensordict_reset, "step_count", torch.zeros(1, dtype=torch.int64))
        return tensordict_reset

    def _step(self, tensordict, next_tensordict):
        root, nxt = entries_view(tensordict), entries_view(next_tensordict)
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


class _HandWritten(TransformedEnv):
    """The catalogue's three transforms written out on ``GymEnv``'s numpy rows, inside the
    bare env's own layers (see the module docstring). Resets run the catalogue's."""

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        state = self.__dict__.get("_hand")
        if state is None:
            norm = self.transform[0]
            loc, scale = norm._stats(torch.device("cpu"))[2]
            rows = [Rows(shape, np.dtype(dtype)).take for shape, dtype in _ROW_KINDS]
            state = self.__dict__["_hand"] = [loc, scale, *rows, None, None, *_routes(self)]
        loc, scale, take_obs, take_sum, take_count, total, count, fused, merge = state
        base = self.base_env
        next_td, pending = fused(tensordict)
        if pending is not None:
            kept = (dict(entries_view(next_td)), next_td.batch_size, next_td.device)
            pending = (pending, kept)
        root, blocks, i = entries_view(tensordict), base._rows, base._rows.last
        # (x - loc) / scale into a fresh row, as ObservationNorm computes it.
        obs, dst = take_obs()
        np.divide(np.subtract(blocks.blocks[0][i], loc, dst), scale, dst)
        set_leaf(next_td, "observation", obs)
        # The running sum and the count: the rows written last, or the reset's zeros.
        if total is None or total[0] is not root["episode_reward"]:
            total = (root["episode_reward"], root["episode_reward"].numpy())
        tensor, row = state[5] = take_sum()
        row[0] = float(total[1][0]) + float(blocks.reward_block[i][0])
        set_leaf(next_td, "episode_reward", tensor)
        if count is None or count[0] is not root["step_count"]:
            count = (root["step_count"], root["step_count"].numpy())
        tensor, row = state[6] = take_count()
        row[0] = int(count[1][0]) + 1
        set_leaf(next_td, "step_count", tensor)
        self._write_step(tensordict, next_td)
        plan = self._cache.get("step_mdp_plan")  # as EnvBase.step_and_maybe_reset reads it
        if plan is None:
            plan = self.step_mdp_plan()
        next_root = plan(tensordict)
        if pending is not None:
            next_root = merge(next_root, pending)
        return tensordict, next_root


def _routes(env: TransformedEnv) -> tuple:
    """(the base env's fused step-and-reset, ``env``'s merge of the reset rows): the routes
    of the step plans (``rl_core.envs.StepPlan``), or the env hooks of older sources."""
    try:
        from rl_core.envs._plans import active_plan
    except ImportError:  # sources before the step plans
        return env.base_env._step_and_reset, env._merge_reset_rows
    return active_plan(env.base_env).step_and_reset, active_plan(env).merge_reset_rows


# (shape, dtype) of the rows of the observation, the sum and the count.
_ROW_KINDS = (((4,), np.float32), ((1,), np.float32), ((1,), np.int64))


def bare() -> EnvBase:
    return GymEnv("CartPole-v1")


def empty() -> EnvBase:
    return TransformedEnv(GymEnv("CartPole-v1"), Compose())


def catalogue() -> EnvBase:
    norm = ObservationNorm(loc=torch.zeros(4), scale=torch.ones(4), standard_normal=True)
    return TransformedEnv(GymEnv("CartPole-v1"), Compose(norm, RewardSum(), StepCounter()))


def floor() -> EnvBase:
    return TransformedEnv(GymEnv("CartPole-v1"), _ThreeOps())


def handwritten() -> EnvBase:
    norm = ObservationNorm(loc=torch.zeros(4), scale=torch.ones(4), standard_normal=True)
    return _HandWritten(GymEnv("CartPole-v1"), Compose(norm, RewardSum(), StepCounter()))


def check_handwritten(steps: int = 300) -> None:
    """Stops the script unless the hand-written step gives the catalogue's trajectory."""
    trajs = []
    for make in (catalogue, handwritten):
        env = make()
        env.set_seed(0)
        torch.manual_seed(0)  # one action for both
        action = env.action_spec.rand()
        fn = lambda td, action=action: td.set("action", action)  # noqa: E731
        trajs.append(env.rollout(steps, fn, break_when_any_done=False))
    ref, ours = trajs
    if set(ref.keys(True, True)) != set(ours.keys(True, True)) or not bool((ref == ours).all()):
        raise SystemExit("handwritten: its trajectory is not the catalogue's; no figures.")


def rollout_time(make: Callable[[], EnvBase]) -> float:
    """CPU seconds per step of ``rollout`` with a fixed action (``bench_transforms.timed``)."""
    env = make()
    env.set_seed(0)
    action = env.action_spec.rand()
    fn = lambda td: td.set("action", action)  # noqa: E731
    env.rollout(10, fn, break_when_any_done=False)
    start = time.process_time()
    env.rollout(ROLLOUT_STEPS, fn, break_when_any_done=False)
    elapsed = time.process_time() - start
    env.close()
    return elapsed / ROLLOUT_STEPS


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
    check_handwritten()
    for _ in range(ROUNDS):
        for make in (bare, empty, catalogue, floor, handwritten):
            p, r, share = medians(make)
            amortized = p * (1 - share) + r * share
            print(
                f"{make.__name__:<10} plain {p * 1e6:6.1f} us   with reset {r * 1e6:6.1f} us   "
                f"per step {amortized * 1e6:6.1f} us"
            )

    times: dict[str, list[float]] = {"bare": [], "catalogue": [], "handwritten": []}
    for _ in range(ROLLOUTS):
        for make in (bare, catalogue, handwritten):
            times[make.__name__].append(rollout_time(make))
    best = {name: min(values) for name, values in times.items()}
    for name in ("catalogue", "handwritten"):
        print(
            f"policy loop: {name:<11} {best[name] * 1e6:6.1f} us/step   bare "
            f"{best['bare'] * 1e6:6.1f} us/step   ratio {best[name] / best['bare']:5.2f}x"
        )


if __name__ == "__main__":
    main()
