"""Environments that speak the rl-core TensorDict contract.

Wrappers of gymnasium and PettingZoo (imported only when a wrapper is built), torch-native
batched envs, and the serial and multi-process batched envs.
"""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-envs")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

from rl_envs.batched import BatchedEnvBase, EnvCreator, EnvMetadata, ParallelEnv, SerialEnv
from rl_envs.libs import (
    GymEnv,
    GymWrapper,
    InfoDictReader,
    MarlGroupMapType,
    PettingZooEnv,
    PettingZooWrapper,
    check_marl_grouping,
    default_info_dict_reader,
    gym_space_to_spec,
    spec_to_gym_space,
)
from rl_envs.native import CartPoleEnv, PendulumEnv

__version__ = _version("rl-envs")

__all__ = [
    "__version__",
    # gymnasium
    "GymEnv",
    "GymWrapper",
    "InfoDictReader",
    "default_info_dict_reader",
    "gym_space_to_spec",
    "spec_to_gym_space",
    # PettingZoo
    "PettingZooEnv",
    "PettingZooWrapper",
    "MarlGroupMapType",
    "check_marl_grouping",
    # torch-native
    "CartPoleEnv",
    "PendulumEnv",
    # batched
    "BatchedEnvBase",
    "EnvCreator",
    "EnvMetadata",
    "ParallelEnv",
    "SerialEnv",
]
