"""rl-buffers' Hydra configs: typed, they build the buffer they name (storage, sampler and
writer included), and register_configs stores the ``replay_buffer`` group."""

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-buffers[hydra]"')

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, PrioritizedSampler, TensorDictReplayBuffer
from rl_buffers.configs import (
    REPLAY_BUFFER_CONFIGS,
    PrioritizedReplayBufferConfig,
    TensorDictReplayBufferConfig,
    register_configs,
)


def test_builds_a_working_buffer():
    cfg = OmegaConf.merge(
        OmegaConf.structured(TensorDictReplayBufferConfig),
        {"storage": {"max_size": 10}, "batch_size": 4},
    )
    buffer = instantiate(cfg)
    assert isinstance(buffer, TensorDictReplayBuffer)
    assert isinstance(buffer.storage, LazyTensorStorage)
    buffer.extend(TensorDict(x=torch.arange(6.0), batch_size=[6]))
    assert buffer.sample().batch_size == torch.Size([4])
    prioritized = instantiate(OmegaConf.structured(PrioritizedReplayBufferConfig))
    assert isinstance(prioritized.sampler, PrioritizedSampler)


def test_unknown_key_and_wrong_type_fail_naming_the_key():
    cfg = OmegaConf.structured(TensorDictReplayBufferConfig)
    with pytest.raises(ConfigKeyError, match=r"Key 'maxsize' not in 'LazyTensorStorageConfig'"):
        OmegaConf.merge(cfg, {"storage": {"maxsize": 10}})
    with pytest.raises(ValidationError, match=r"(?s)full_key: storage\.max_size"):
        OmegaConf.merge(cfg, {"storage": {"max_size": "big"}})


def test_register_configs_stores_the_replay_buffer_group():
    stored = {}

    class Store:
        def store(self, group=None, name=None, node=None, provider=None):
            stored[(group, name)] = node

    register_configs(Store())
    assert stored == {("replay_buffer", n): c for n, c in REPLAY_BUFFER_CONFIGS.items()}
