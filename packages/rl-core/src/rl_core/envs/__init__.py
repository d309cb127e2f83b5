"""Environments: the ``EnvBase`` contract, rollouts, spec checks and spec-free policies."""

from rl_core._accel.seam import StepPlan, reference_only
from rl_core.envs._rollout import rollout
from rl_core.envs._spec_checks import set_spec_checks, spec_checks_enabled
from rl_core.envs.base import EnvBase
from rl_core.envs.checks import check_env_specs
from rl_core.envs.policies import RandomPolicy
from rl_core.envs.trajectory_writer import TrajectoryWriter

__all__ = [
    "EnvBase",
    "RandomPolicy",
    "StepPlan",
    "TrajectoryWriter",
    "check_env_specs",
    "reference_only",
    "rollout",
    "set_spec_checks",
    "spec_checks_enabled",
]
