"""The public names of the step-plan machinery, kept where rl-core 0.3 published them.

The machinery itself is speed-only code in rl-core's private folder (``rl_core._accel``,
reached through ``rl_core._accel.seam``); the rule of when an env runs its plan is
:func:`active_plan` of ``rl_core.envs._plans``. These names
forward to them.
"""

from rl_core._accel.seam import (
    FUSED_METHODS,
    REFERENCE_METHODS,
    StepPlan,
    fusable_as_declared,
    plan_applies,
    reference_only,
)
from rl_core.envs._plans import active_plan

__all__ = [
    "FUSED_METHODS",
    "REFERENCE_METHODS",
    "StepPlan",
    "active_plan",
    "fusable_as_declared",
    "plan_applies",
    "reference_only",
]
