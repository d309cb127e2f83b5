"""rl-collectors' Hydra configs: typed, they build the collector they name once given the env
and the policy, and register_configs stores the ``collector`` group."""

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-collectors[hydra]"')

from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from rl_collectors import SyncDataCollector
from rl_collectors.configs import COLLECTOR_CONFIGS, SyncDataCollectorConfig, register_configs
from rl_core import RandomPolicy
from rl_core.testing import CountingEnv


def test_builds_a_collector_from_env_and_policy():
    cfg = OmegaConf.merge(
        OmegaConf.structured(SyncDataCollectorConfig), {"frames_per_batch": 8, "total_frames": 16}
    )
    env = CountingEnv(batch_size=[2])
    collector = instantiate(cfg)(env, RandomPolicy(env.action_spec))
    assert isinstance(collector, SyncDataCollector)
    batches = list(collector)
    assert [b.numel() for b in batches] == [8, 8]


def test_unknown_key_and_wrong_type_fail_naming_the_key():
    cfg = OmegaConf.structured(SyncDataCollectorConfig)
    with pytest.raises(
        ConfigKeyError, match=r"Key 'frames_per_batches' not in 'SyncDataCollectorConfig'"
    ):
        OmegaConf.merge(cfg, {"frames_per_batches": 8})
    with pytest.raises(ValidationError, match=r"(?s)full_key: frames_per_batch"):
        OmegaConf.merge(cfg, {"frames_per_batch": "lots"})


def test_register_configs_stores_the_collector_group():
    stored = {}

    class Store:
        def store(self, group=None, name=None, node=None, provider=None):
            stored[(group, name)] = node

    register_configs(Store())
    assert stored == {("collector", n): c for n, c in COLLECTOR_CONFIGS.items()}
