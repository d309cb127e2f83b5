"""rl-envs' Hydra configs: typed, they build the env they name, and register_configs stores
the ``env`` and ``transform`` groups."""

import inspect

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-envs[hydra]"')

from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

import rl_envs
from rl_envs import CartPoleEnv
from rl_envs.configs import (
    ENV_CONFIGS,
    LIBRARY_ENV_CONFIGS,
    TRANSFORM_CONFIGS,
    CartPoleEnvConfig,
    GymEnvConfig,
    register_configs,
)


def test_builds_the_env_it_names():
    cfg = OmegaConf.merge(OmegaConf.structured(CartPoleEnvConfig), {"batch_size": [3]})
    env = instantiate(cfg)
    assert isinstance(env, CartPoleEnv)
    assert tuple(env.batch_size) == (3,)


def test_unknown_key_and_wrong_type_fail_naming_the_key():
    with pytest.raises(ConfigKeyError, match=r"Key 'num_env' not in 'GymEnvConfig'"):
        OmegaConf.merge(OmegaConf.structured(GymEnvConfig), {"num_env": 4})
    with pytest.raises(
        ValidationError, match=r"(?s)could not be converted to Integer.*full_key: num_envs"
    ):
        OmegaConf.merge(OmegaConf.structured(GymEnvConfig), {"num_envs": "eight"})


def test_register_configs_stores_the_env_and_transform_groups():
    stored = {}

    class Store:
        def store(self, group=None, name=None, node=None, provider=None):
            stored[(group, name)] = (node, provider)

    register_configs(Store())
    envs = {("env", n): (c, "rl_envs") for n, c in ENV_CONFIGS.items()}
    assert {k: v for k, v in stored.items() if k[0] == "env"} == envs
    transforms = {k[1]: v[0] for k, v in stored.items() if k[0] == "transform"}
    assert transforms["step_counter"] is TRANSFORM_CONFIGS["StepCounter"]
    assert transforms["d_type_cast_transform"] is TRANSFORM_CONFIGS["DTypeCastTransform"]
    assert sorted(transforms.values(), key=id) == sorted(TRANSFORM_CONFIGS.values(), key=id)


# Arguments per env library's config; brax and jumanji compile with jax (10-40 s): slow.
LIBRARY_ARGS = {
    "mo_gym": ({"env_name": "deep-sea-treasure-v0", "categorical_action_encoding": True}, None),
    "brax": ({"env_name": "fast", "batch_size": [2], "seed": 0}, "slow"),
    "dm_control": ({"env_name": "cartpole", "task_name": "balance", "seed": 1}, None),
    "jumanji": ({"env_name": "Game2048-v1", "batch_size": [2], "seed": 0}, "slow"),
    "openspiel": ({"game_string": "tic_tac_toe", "categorical_actions": True}, None),
    "pettingzoo": ({"task": "tictactoe_v3", "parallel": False}, None),
    "vmas": ({"scenario": "balance", "num_envs": 2, "max_steps": 5}, None),
    "multi_threaded": ({"num_workers": 2, "env_name": "CartPole-v1", "seed": 3}, None),
}
LIBRARY_MODULES = {
    "mo_gym": "mo_gymnasium", "brax": "brax", "dm_control": "dm_control", "jumanji": "jumanji",
    "openspiel": "pyspiel", "pettingzoo": "pettingzoo", "vmas": "vmas", "multi_threaded": "envpool",
}  # fmt: skip


@pytest.mark.parametrize(
    "option",
    [
        pytest.param(o, marks=[pytest.mark.slow] if mark else [])
        for o, (_, mark) in LIBRARY_ARGS.items()
    ],
)
def test_a_library_env_config_builds_its_env_with_the_arguments(option):
    pytest.importorskip(LIBRARY_MODULES[option], reason=f'pip install "rl-envs[{option}]"')
    args, _ = LIBRARY_ARGS[option]
    cls = getattr(rl_envs, LIBRARY_ENV_CONFIGS[option].__name__.removesuffix("Config"))
    cfg = OmegaConf.merge(OmegaConf.structured(ENV_CONFIGS[option]), args)
    built, by_hand = instantiate(cfg), cls(**args)
    try:
        assert type(built) is cls
        assert built.batch_size == by_hand.batch_size
        assert built.full_observation_spec == by_hand.full_observation_spec
        assert built.full_action_spec == by_hand.full_action_spec
    finally:
        built.close()
        by_hand.close()


def test_library_env_configs_take_the_constructors_arguments():
    assert set(LIBRARY_ENV_CONFIGS) == set(LIBRARY_ARGS)
    for option, cfg in LIBRARY_ENV_CONFIGS.items():
        cls = getattr(rl_envs, cfg.__name__.removesuffix("Config"))
        assert cfg._target_ == f"rl_envs.{cls.__name__}"
        assert set(LIBRARY_ARGS[option][0]) <= set(inspect.signature(cls).parameters)
    with pytest.raises(ConfigKeyError, match=r"Key 'scenaro' not in 'VmasEnvConfig'"):
        OmegaConf.merge(OmegaConf.structured(ENV_CONFIGS["vmas"]), {"scenaro": "balance"})
