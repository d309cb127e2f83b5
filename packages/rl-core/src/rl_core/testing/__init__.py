"""Test helpers for env implementations: the conformance kit and a small reference env.

:class:`EnvConformanceSuite` (pytest) and :func:`run_env_conformance` (anywhere) run every
check of ``REQUIRED_CHECKS`` and ``OPTIONAL_CHECKS`` on an env. Two checks are also public on
their own, because fast-path tests call them with their own settings: :func:`check_step_plan`
(an env's step plan against its reference ``step``) and :func:`check_random_rollout` (the
no-policy rollout against the generic loop).
"""

from rl_core.testing._conformance import (
    OPTIONAL_CHECKS,
    REQUIRED_CHECKS,
    ConformanceError,
    EnvConformanceSuite,
    check_random_rollout,
    check_step_plan,
    run_env_conformance,
)
from rl_core.testing.envs import CountingEnv

__all__ = [
    "OPTIONAL_CHECKS",
    "REQUIRED_CHECKS",
    "ConformanceError",
    "CountingEnv",
    "EnvConformanceSuite",
    "check_random_rollout",
    "check_step_plan",
    "run_env_conformance",
]
