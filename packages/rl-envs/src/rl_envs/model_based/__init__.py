"""Model-based environments: envs whose step is a learned or given model of the dynamics."""

from rl_envs.model_based.common import ModelBasedEnvBase
from rl_envs.model_based.dreamer import DreamerEnv

__all__ = ["ModelBasedEnvBase", "DreamerEnv"]
