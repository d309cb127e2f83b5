"""rl-envs' Hydra configs: typed, they build the env they name, and register_configs stores
the ``env`` and ``transform`` groups."""

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-envs[hydra]"')

from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from rl_envs import CartPoleEnv
from rl_envs.configs import (
    ENV_CONFIGS,
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
