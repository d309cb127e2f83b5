"""env_creator and get_env_metadata (TorchRL's helpers) on real envs."""

import pytest
import torch

from rl_core.envs import EnvBase
from rl_core.testing import CountingEnv
from rl_envs import EnvCreator, EnvMetadata, env_creator, get_env_metadata


def test_env_creator_wraps_a_factory_once():
    creator = env_creator(CountingEnv)
    assert isinstance(creator, EnvCreator)
    assert env_creator(creator) is creator
    assert isinstance(creator(), CountingEnv)


def test_metadata_of_an_env_a_creator_and_a_factory_agree():
    env = CountingEnv(batch_size=[2])
    expected = EnvMetadata.from_env(env)
    assert get_env_metadata(env).difference(expected) is None
    built = []

    def factory(batch_size):
        built.append(CountingEnv(batch_size=batch_size))
        return built[-1]

    meta = get_env_metadata(factory, {"batch_size": [2]})
    assert meta.batch_size == torch.Size([2])
    assert meta.difference(expected) is None
    assert built[-1].is_closed  # the env it built is closed after reading
    creator = EnvCreator(factory, {"batch_size": [2]})
    assert get_env_metadata(creator).difference(expected) is None
    seen = []
    get_env_metadata(creator, env_validator=seen.append)
    assert len(seen) == 1
    assert isinstance(seen[0], EnvBase)
    with pytest.raises(ValueError, match=r"the EnvCreator holds create_env_kwargs=\{'batch_size'"):
        get_env_metadata(creator, {"batch_size": [3]})
    with pytest.raises(TypeError, match="get_env_metadata: expected an env, an EnvCreator"):
        get_env_metadata(3)
    with pytest.raises(TypeError, match="the factory returned a int, expected an EnvBase"):
        get_env_metadata(lambda: 3)
