"""rl-envs' Hydra configs: typed, they build the env they name, and register_configs stores
the ``env`` group."""

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-envs[hydra]"')

from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from rl_envs import CartPoleEnv
from rl_envs.configs import ENV_CONFIGS, CartPoleEnvConfig, GymEnvConfig, register_configs


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


def test_register_configs_stores_the_env_group():
    stored = {}

    class Store:
        def store(self, group=None, name=None, node=None, provider=None):
            stored[(group, name)] = (node, provider)

    register_configs(Store())
    assert stored == {("env", n): (c, "rl_envs") for n, c in ENV_CONFIGS.items()}
