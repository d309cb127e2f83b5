from functools import partial

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_collectors import (
    MultiProcessedWeightUpdater,
    MultiSyncDataCollector,
    RemoteModuleWeightUpdater,
    SyncDataCollector,
    VanillaWeightUpdater,
    WeightUpdaterBase,
)
from rl_core.testing import CountingEnv


class Recorder(WeightUpdaterBase):
    """Records every step of a push: what each worker got, which were skipped."""

    def __init__(self, source=None, skip=()):
        super().__init__()
        self.source, self.skip, self.log = source, set(skip), []

    def _get_server_weights(self):
        if self.source is None:
            return super()._get_server_weights()
        return TensorDict({"w": torch.tensor(float(self.source))})

    def _maybe_map_weights(self, server_weights):
        return server_weights.apply(lambda x: x * 10)

    def _sync_weights_with_worker(self, *, worker_id=None, server_weights):
        self.log.append((worker_id, float(server_weights["w"])))

    def all_worker_ids(self):
        return [0, 1, 2]

    def _skip_update(self, worker_id):
        return worker_id in self.skip


def bias_policy():
    """action = bias (weight 0): CountingEnv adds it to the count, so outputs show weights."""
    layer = nn.Linear(1, 1)
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    return TensorDictModule(layer, in_keys=["observation"], out_keys=["action"])


def test_push_resolves_maps_syncs_skips_and_runs_hooks():
    hooks = []
    updater = Recorder(source=1.5, skip=[1])
    updater.register_post_hook(lambda: hooks.append(len(updater.log)))
    updater.push_weights()  # fetched from the server, mapped (x10), worker 1 skipped
    assert updater.log == [(0, 15.0), (2, 15.0)]
    assert hooks == [2]
    updater.log.clear()
    updater(TensorDict({"w": torch.tensor(2.0)}), worker_ids=2)  # given weights, one worker
    assert updater.log == [(2, 20.0)]
    updater.log.clear()
    updater.push_weights({"w": torch.tensor(3.0)}, worker_ids=[0, 2])  # a state dict
    assert updater.log == [(0, 30.0), (2, 30.0)]


def test_push_without_weights_or_source_raises():
    with pytest.raises(RuntimeError, match="no weights were passed"):
        Recorder().push_weights()
    with pytest.raises(TypeError, match=r"expected weights as an nn\.Module"):
        Recorder().push_weights([1.0])
    with pytest.raises(TypeError, match="expected a callable"):
        Recorder().register_post_hook(3)


def test_collector_is_a_weak_reference():
    updater = Recorder()
    policy = bias_policy()
    collector = SyncDataCollector(CountingEnv(), policy, frames_per_batch=2, weight_updater=updater)
    assert updater.collector is collector
    assert updater.collectors == [collector]
    del collector
    assert updater.collector is None
    assert updater.collectors is None


def test_vanilla_copies_in_place_and_state_dicts_nest():
    policy, trained = nn.Linear(2, 1), nn.Linear(2, 1)
    updater = VanillaWeightUpdater(policy_weights=TensorDict.from_module(policy))
    updater.push_weights()  # no getter: nothing to copy
    assert not torch.equal(policy.weight, trained.weight)
    updater.push_weights(trained.state_dict())
    assert torch.equal(policy.weight, trained.weight)
    assert torch.equal(policy.bias, trained.bias)
    getter = VanillaWeightUpdater(
        weight_getter=lambda: {"weight": torch.ones(1, 2)},
        policy_weights=TensorDict.from_module(policy),
    )
    getter.push_weights()
    assert (policy.weight == 1).all()
    assert VanillaWeightUpdater.from_policy(nn.ReLU()) is None
    with pytest.raises(TypeError, match="policy_weights as a TensorDict"):
        VanillaWeightUpdater(policy_weights=policy.state_dict())


def test_sync_collector_pushes_through_its_updater():
    policy = bias_policy()
    collector = SyncDataCollector(
        CountingEnv(max_count=100, batch_size=[2]), policy, frames_per_batch=4
    )
    assert isinstance(collector.weight_updater, VanillaWeightUpdater)
    trained = TensorDict.from_module(policy).data.clone()
    trained["module", "bias"] = torch.ones(1)
    collector.update_policy_weights_(trained)
    assert collector.policy_version == 1
    assert (collector.next()["action"] == 1).all()


def test_remote_module_updater_needs_explicit_weights():
    policy = bias_policy()
    collector = SyncDataCollector(
        CountingEnv(max_count=100),
        policy,
        frames_per_batch=2,
        weight_updater=RemoteModuleWeightUpdater(),
    )
    with pytest.raises(RuntimeError, match="pass them explicitly"):
        collector.update_policy_weights_()
    weights = TensorDict.from_module(policy).data.clone()
    weights["module", "bias"] = torch.ones(1)
    collector.update_policy_weights_(weights)
    assert (collector.next()["action"] == 1).all()
    orphan = RemoteModuleWeightUpdater()
    with pytest.raises(RuntimeError, match="no collector"):
        orphan.push_weights(weights)


def test_multiprocessed_updater_updates_shared_copies():
    policy = nn.Linear(1, 1)
    shared = {name: TensorDict.from_module(policy).data.clone().share_memory_() for name in "ab"}
    updater = MultiProcessedWeightUpdater(
        get_server_weights=lambda: TensorDict.from_module(policy).data, policy_weights=shared
    )
    assert updater.all_worker_ids() == ["a", "b"]
    with torch.no_grad():
        policy.weight.fill_(4.0)
    updater.push_weights(worker_ids="b")
    assert float(shared["b"]["weight"]) == 4.0
    assert float(shared["a"]["weight"]) != 4.0
    with pytest.raises(KeyError, match="unknown worker id 'c'"):
        updater.push_weights(worker_ids="c")
    with pytest.raises(TypeError, match="non-empty dict"):
        MultiProcessedWeightUpdater(get_server_weights=None, policy_weights={})
    manual = MultiProcessedWeightUpdater(get_server_weights=None, policy_weights=shared)
    with pytest.raises(RuntimeError, match="no weights were passed"):
        manual.push_weights()


def test_multi_collector_workers_read_what_its_updater_publishes():
    policy = bias_policy()
    collector = MultiSyncDataCollector(
        [partial(CountingEnv, max_count=100)] * 2, policy, frames_per_batch=4
    )
    try:
        updater = collector.weight_updater
        assert isinstance(updater, MultiProcessedWeightUpdater)
        assert updater.collector is collector
        first = collector.next()
        assert (first["action"] == 0).all()
        # Through the updater directly, as a trainer holding only the updater would.
        updater.push_weights(TensorDict({"module": {"bias": torch.ones(1)}}, []))
        assert collector.policy_version == 1
        second = collector.next()
        assert (second["action"] == 1).all()
        assert (second["collector", "policy_version"] == 1).all()
    finally:
        collector.shutdown()
