"""Test helpers for env implementations: the conformance kit and small reference envs."""

from rl_core.testing.conformance import (
    OPTIONAL_CHECKS,
    REQUIRED_CHECKS,
    ConformanceError,
    EnvConformanceSuite,
    check_close,
    check_device,
    check_done_flags,
    check_partial_reset,
    check_random_rollout,
    check_reset,
    check_rollout_shapes,
    check_seeding,
    check_specs_match_rollout,
    check_step_and_reset,
    check_step_mdp_round_trip,
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
    "check_close",
    "check_device",
    "check_done_flags",
    "check_partial_reset",
    "check_random_rollout",
    "check_reset",
    "check_rollout_shapes",
    "check_seeding",
    "check_specs_match_rollout",
    "check_step_and_reset",
    "check_step_mdp_round_trip",
    "check_step_plan",
    "run_env_conformance",
]
