"""When an env runs its step plan: the one rule between ``EnvBase``'s reference code and the
plans of ``rl_core._accel`` (reached through its seam)."""

from __future__ import annotations

from typing import Any, Protocol

from rl_core._accel.seam import PLANS, StepPlan, plan_applies
from rl_core.envs._spec_checks import SWITCH


class PlannedEnv(Protocol):
    """What the rule reads of an env (``EnvBase`` has it): the cache it keeps with its specs
    and its ``_make_step_plan`` hook."""

    _cache: dict[str, Any]

    def _make_step_plan(self) -> StepPlan | None: ...


_NO_PLAN: Any = object()


def built_plan(env: PlannedEnv) -> StepPlan | None:
    """``env``'s step plan (its ``_make_step_plan()``), built on first use where
    :func:`~rl_core._accel.seam.plan_applies` holds and cached with its specs; else ``None``."""
    plan = env._cache.get("step_plan", _NO_PLAN)
    if plan is _NO_PLAN:
        plan = env._cache["step_plan"] = env._make_step_plan() if plan_applies(env) else None
    return plan


def active_plan(env: PlannedEnv) -> StepPlan | None:
    """``env``'s step plan where plans apply now (spec checks off, plans not switched off by
    :func:`~rl_core.envs.reference_only`), else ``None``: the one rule that decides whether
    ``EnvBase``'s reference code or the plan runs."""
    if SWITCH.enabled or not PLANS.enabled:
        return None
    plan = env._cache.get("step_plan", _NO_PLAN)
    if plan is _NO_PLAN:
        plan = built_plan(env)
    return plan


__all__ = ["PlannedEnv", "active_plan", "built_plan"]
