"""rl-collectors' Hydra configs: typed, they build the collector they name once given the env
and the policy, and register_configs stores the ``collector`` group."""

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-collectors[hydra]"')

from functools import partial

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError
from tensordict import TensorDict

import rl_collectors
from rl_collectors import SyncDataCollector, VanillaWeightUpdater
from rl_collectors import weight_sync as sync
from rl_collectors.configs import (
    COLLECTOR_CONFIGS,
    WEIGHT_SYNC_SCHEME_CONFIGS,
    WEIGHT_UPDATER_CONFIGS,
    CollectorConfig,
    MultiSyncCollectorConfig,
    RPCWeightSyncSchemeConfig,
    SyncDataCollectorConfig,
    VanillaWeightUpdaterConfig,
    register_configs,
)
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
    expected = {("collector", n): c for n, c in COLLECTOR_CONFIGS.items()}
    expected.update({("weight_updater", n): c for n, c in WEIGHT_UPDATER_CONFIGS.items()})
    expected.update({("weight_sync_scheme", n): c for n, c in WEIGHT_SYNC_SCHEME_CONFIGS.items()})
    assert stored == expected


def test_the_collector_config_builds_a_collector_in_this_process():
    cfg = OmegaConf.merge(OmegaConf.structured(CollectorConfig), {"frames_per_batch": 4})
    cfg.total_frames = 8
    env = CountingEnv()
    collector = instantiate(cfg)(env, RandomPolicy(env.action_spec))
    assert type(collector) is rl_collectors.Collector
    assert [b.numel() for b in collector] == [4, 4]
    assert not CollectorConfig.env_factory  # rl-train passes it the built env


def test_a_multi_process_collector_config_refuses_a_built_env_naming_the_field():
    cfg = OmegaConf.structured(MultiSyncCollectorConfig)
    assert MultiSyncCollectorConfig.env_factory  # rl-train passes it an env factory
    env = CountingEnv()
    with pytest.raises(
        TypeError, match=r"MultiSyncCollectorConfig\.create_env_fn: expected an env factory"
    ):
        instantiate(cfg)(env, RandomPolicy(env.action_spec))
    with pytest.raises(
        ValueError, match=r"MultiSyncCollectorConfig\.num_workers: expected an int >= 1, got 0"
    ):
        instantiate(cfg, num_workers=0)(CountingEnv, RandomPolicy(env.action_spec))


def test_a_multi_sync_collector_config_runs_num_workers_workers():
    cfg = OmegaConf.merge(
        OmegaConf.structured(MultiSyncCollectorConfig),
        {"frames_per_batch": 8, "total_frames": 16, "num_workers": 2},
    )
    env = CountingEnv()
    collector = instantiate(cfg)(partial(CountingEnv), RandomPolicy(env.action_spec))
    try:
        shapes = [tuple(b.shape) for b in collector]
    finally:
        collector.shutdown()
    assert shapes == [(2, 4), (2, 4)]


def test_the_vanilla_weight_updater_config_copies_the_trainer_weights_into_the_policy():
    policy_weights = TensorDict(w=torch.zeros(3))
    trained = TensorDict(w=torch.tensor([1.0, 2.0, 3.0]))
    updater = instantiate(OmegaConf.structured(VanillaWeightUpdaterConfig))(
        weight_getter=lambda: trained, policy_weights=policy_weights
    )
    assert isinstance(updater, VanillaWeightUpdater)
    updater()
    assert policy_weights["w"].tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("option", sorted(WEIGHT_SYNC_SCHEME_CONFIGS))
def test_every_weight_sync_scheme_config_builds_its_scheme(option):
    node = WEIGHT_SYNC_SCHEME_CONFIGS[option]
    scheme = instantiate(OmegaConf.merge(OmegaConf.structured(node), {"strategy": "state_dict"}))
    assert type(scheme) is getattr(sync, node.__name__.removesuffix("Config"))
    with pytest.raises(ValidationError, match=r"(?s)full_key: timeout"):
        OmegaConf.merge(OmegaConf.structured(RPCWeightSyncSchemeConfig), {"timeout": "soon"})
