"""The conformance check of an env's step plan (``rl_core.envs.StepPlan``): the plan's routes
against the reference code, for any env, transforms included. ``rl_core.testing.check_step_plan``
is its public entry point (the kit's failure and comparison rules, the env's plan rule)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

import torch
from tensordict import TensorDictBase

from rl_core._accel.step_plan import PlanEnv, StepPlan, reference_only


class CheckedEnv(PlanEnv, Protocol):
    """What the check reads of an env (``EnvBase`` has it): besides :class:`PlanEnv`, its
    public stepping API."""

    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None: ...

    def step(self, tensordict: TensorDictBase) -> TensorDictBase: ...

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]: ...

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase: ...

    def mark_finished(self, root: TensorDictBase) -> bool: ...

    def close(self) -> None: ...


def seeded_twins(
    envs: list[CheckedEnv], seed: int, steps: int
) -> tuple[list[TensorDictBase], Iterator[TensorDictBase]]:
    """Seeds and resets twin envs alike: their first roots, and ``steps`` random actions of
    ``envs[0]``'s action spec, each drawn after seeding torch from a generator seeded with
    ``seed`` (the same actions for every twin, whatever the envs draw in between)."""
    for env in envs:
        env.set_seed(seed)
    roots = [env.reset() for env in envs]
    generator = torch.Generator().manual_seed(seed)

    def actions() -> Iterator[TensorDictBase]:
        for _ in range(steps):
            torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=generator)))
            yield envs[0].full_action_spec.rand()

    return roots, actions()


def _step_then_reset(
    env: CheckedEnv, tensordict: TensorDictBase
) -> tuple[TensorDictBase, TensorDictBase]:
    """``step``, ``step_mdp``, then a ``reset`` of the sub-envs that finished: the loop of
    ``rollout(break_when_any_done=True)`` and of user code calling ``step`` and ``reset``."""
    tensordict = env.step(tensordict)
    next_root = env.step_mdp_plan()(tensordict)
    if env.mark_finished(next_root):
        next_root = env.reset(next_root)
    return tensordict, next_root


def check_step_plan(
    make_env: Callable[[], CheckedEnv],
    *,
    steps: int = 60,
    fail: Callable[[str, CheckedEnv, str], None],
    same: Callable[[object, object], bool],
    plan_of: Callable[[CheckedEnv], StepPlan | None],
) -> bool:
    """Twin envs seeded alike take the same actions, one with its step plan, the other with
    the reference code only (``reference_only``), through ``step_and_maybe_reset`` and then
    through ``step`` and ``reset``; every entry of the transitions and next roots (values,
    shapes, dtypes, done flags, reset rows) must match, and so must ``rand_action``'s draws
    under the same torch seed. Returns False (nothing checked) for
    envs without a plan."""
    envs = [make_env(), make_env()]
    try:
        if plan_of(envs[0]) is None:
            return False
        for route, call in (
            ("step_and_maybe_reset", lambda e, td: e.step_and_maybe_reset(td)),
            ("step then reset", _step_then_reset),
        ):
            with reference_only():
                roots, draws = seeded_twins(envs, 5, steps)
            for t, actions in enumerate(draws):
                planned = call(envs[0], roots[0].update(actions.clone()))
                with reference_only():
                    reference = call(envs[1], roots[1].update(actions.clone()))
                for what, mine, theirs in zip(
                    ("transition", "next root"), planned, reference, strict=True
                ):
                    _compare(envs[0], route, t, what, mine, theirs, fail, same)
                roots = [planned[1], reference[1]]
        # rand_action: the plan draws one action entry from its own spec, the reference from
        # the full action spec; the same torch seed must give the same actions.
        for t in range(3):
            torch.manual_seed(t)
            planned = envs[0].rand_action(roots[0].clone())
            with reference_only():
                torch.manual_seed(t)
                reference = envs[1].rand_action(roots[1].clone())
            _compare(envs[0], "rand_action", t, "root", planned, reference, fail, same)
        return True
    finally:
        for env in envs:
            env.close()


def _compare(
    env: CheckedEnv,
    route: str,
    t: int,
    what: str,
    mine: TensorDictBase,
    theirs: TensorDictBase,
    fail: Callable[[str, CheckedEnv, str], None],
    same: Callable[[object, object], bool],
) -> None:
    keys = set(mine.keys(True, True))
    if keys != set(theirs.keys(True, True)):
        fail(
            "check_step_plan",
            env,
            f"{route}, step {t}: the {what} of the step plan has the entries "
            f"{sorted(map(str, keys))}, the reference "
            f"{sorted(map(str, theirs.keys(True, True)))}.",
        )
    for key in sorted(keys, key=str):
        if not same(mine.get(key), theirs.get(key)):
            fail(
                "check_step_plan",
                env,
                f"{route}, step {t}: {key!r} of the {what} differs between the step plan and "
                f"the reference code.",
            )
