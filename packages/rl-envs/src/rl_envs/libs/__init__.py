"""Wrappers of third-party environment libraries (gymnasium, PettingZoo, DeepMind Control, ...).

The libraries themselves are optional: they are imported when a wrapper is built, never when
this package is imported.
"""

from rl_envs.libs._gym_info import InfoDictReader, default_info_dict_reader
from rl_envs.libs._gym_specs import (
    gym_space_to_spec,
    register_gym_spec_conversion,
    spec_to_gym_space,
)
from rl_envs.libs.available import get_available_libraries
from rl_envs.libs.brax import BraxEnv, BraxWrapper
from rl_envs.libs.dm_control import DMControlEnv, DMControlWrapper
from rl_envs.libs.envpool import MultiThreadedEnv, MultiThreadedEnvWrapper
from rl_envs.libs.group_map import MarlGroupMapType, check_marl_grouping
from rl_envs.libs.gym import GymEnv, GymWrapper
from rl_envs.libs.gym_backend import gym_backend, set_gym_backend
from rl_envs.libs.gym_like import GymLikeEnv
from rl_envs.libs.implement_for import implement_for
from rl_envs.libs.jumanji import JumanjiEnv, JumanjiWrapper
from rl_envs.libs.lbforaging import LBForagingEnv, LBForagingWrapper
from rl_envs.libs.mo_gym import MOGymEnv, MOGymWrapper
from rl_envs.libs.mujoco import MujocoEnv
from rl_envs.libs.mujoco_ant import AntEnv
from rl_envs.libs.mujoco_hopper import HopperEnv
from rl_envs.libs.mujoco_humanoid import HumanoidEnv
from rl_envs.libs.mujoco_point_mass import PointMassEnv
from rl_envs.libs.mujoco_walker import Walker2dEnv
from rl_envs.libs.openspiel import OpenSpielWrapper
from rl_envs.libs.openspiel_env import OpenSpielEnv
from rl_envs.libs.pettingzoo import PettingZooWrapper
from rl_envs.libs.pettingzoo_env import PettingZooEnv
from rl_envs.libs.vmas import VmasEnv, VmasWrapper

__all__ = [
    "AntEnv",
    "BraxEnv",
    "BraxWrapper",
    "DMControlEnv",
    "DMControlWrapper",
    "JumanjiEnv",
    "JumanjiWrapper",
    "LBForagingEnv",
    "LBForagingWrapper",
    "MOGymEnv",
    "MOGymWrapper",
    "GymEnv",
    "GymWrapper",
    "HopperEnv",
    "HumanoidEnv",
    "InfoDictReader",
    "MarlGroupMapType",
    "MujocoEnv",
    "MultiThreadedEnv",
    "MultiThreadedEnvWrapper",
    "OpenSpielEnv",
    "OpenSpielWrapper",
    "PointMassEnv",
    "PettingZooEnv",
    "PettingZooWrapper",
    "VmasEnv",
    "VmasWrapper",
    "Walker2dEnv",
    "check_marl_grouping",
    "default_info_dict_reader",
    "get_available_libraries",
    "gym_backend",
    "gym_space_to_spec",
    "GymLikeEnv",
    "register_gym_spec_conversion",
    "implement_for",
    "set_gym_backend",
    "spec_to_gym_space",
]
