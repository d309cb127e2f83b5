"""Model-based environments: envs whose step is a learned or given model of the dynamics, and
the model-predictive-control planners that plan through them."""

from rl_envs.model_based.common import ModelBasedEnvBase
from rl_envs.model_based.dreamer import DreamerDecoder, DreamerEnv
from rl_envs.model_based.imagined import ImaginedEnv
from rl_envs.model_based.planners import CEMPlanner, MPCPlannerBase, MPPIPlanner
from rl_envs.model_based.world_model_env import WorldModelEnv

__all__ = [
    "ModelBasedEnvBase",
    "DreamerEnv",
    "MPCPlannerBase",
    "CEMPlanner",
    "MPPIPlanner",
    "WorldModelEnv",
    "ImaginedEnv",
    "DreamerDecoder",
]
