"""Wrappers of third-party environment libraries (imported only when used)."""

from rl_envs.libs.group_map import MarlGroupMapType, check_marl_grouping
from rl_envs.libs.pettingzoo import PettingZooWrapper
from rl_envs.libs.pettingzoo_env import PettingZooEnv

__all__ = ["MarlGroupMapType", "PettingZooEnv", "PettingZooWrapper", "check_marl_grouping"]
