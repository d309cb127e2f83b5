"""Wrappers of third-party environment libraries (gymnasium).

The libraries themselves are optional: they are imported when a wrapper is built, never when
this package is imported.
"""

from rl_envs.libs._gym_info import InfoDictReader, default_info_dict_reader
from rl_envs.libs._gym_specs import gym_space_to_spec, spec_to_gym_space
from rl_envs.libs.gym import GymEnv, GymWrapper

__all__ = [
    "GymEnv",
    "GymWrapper",
    "InfoDictReader",
    "default_info_dict_reader",
    "gym_space_to_spec",
    "spec_to_gym_space",
]
