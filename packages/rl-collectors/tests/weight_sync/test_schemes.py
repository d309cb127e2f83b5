import multiprocessing
import os
import signal
import time
from functools import partial

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_collectors import MultiAsyncCollector, MultiSyncCollector, SyncDataCollector
from rl_collectors.weight_sync import (
    MPTransport,
    MultiProcessWeightSyncScheme,
    NoWeightSyncScheme,
    SharedMemTransport,
    SharedMemWeightSyncScheme,
    WeightSyncScheme,
)
from rl_collectors.weight_update import VanillaWeightUpdater
from rl_core.testing import CountingEnv

make = partial(CountingEnv, max_count=4, batch_size=[2])
SCHEMES = [SharedMemWeightSyncScheme, MultiProcessWeightSyncScheme]


class Probe(nn.Module):
    """Writes its own weights into the batch: what the worker holds is read bit for bit."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(3))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        action = torch.zeros(*obs.shape[:-1], 1, dtype=torch.long)
        return action, self.w.detach().expand(*obs.shape[:-1], 3).clone()


def probe_policy():
    return TensorDictModule(Probe(), in_keys=["observation"], out_keys=["action", "probe"])


def random_weights(seed):
    return TensorDict({"w": torch.randn(3, generator=torch.Generator().manual_seed(seed))}, [])


@pytest.mark.parametrize("cls", [*SCHEMES, NoWeightSyncScheme])
def test_each_scheme_delivers_exact_versioned_weights_in_process(cls):
    trainer, worker = Probe(), Probe()
    scheme = cls()
    scheme.init_on_sender(model_id="policy", model=trainer, num_workers=1)
    scheme.init_on_receiver(model_id="policy", model=worker, worker_idx=0)
    for version in (1, 2):
        weights = random_weights(version)
        assert scheme.send(weights) == version
        scheme.receive(timeout=1.0)
        if cls is NoWeightSyncScheme:
            assert scheme.version == 0
            assert torch.equal(worker.w, torch.zeros(3))
        else:
            assert scheme.version == version
            assert torch.equal(worker.w.detach(), weights["w"])  # bit-identical
    assert scheme.receive(timeout=0.0) is None  # nothing newer
    scheme.shutdown()


def _receiver(scheme, worker_idx, out):
    model = Probe()
    scheme.init_on_receiver(model_id="policy", model=model, worker_idx=worker_idx)
    while scheme.version < 2:
        scheme.receive(timeout=5.0)
    out.send((scheme.version, model.w.detach().tolist()))  # plain floats: exact for float32


@pytest.mark.parametrize("cls", SCHEMES)
def test_weights_reach_worker_processes_bit_identical(cls):
    # fork: the receiver is a function of this file, which a spawned child cannot import
    # (spawn is covered by the collector test below, whose workers run this stack's code).
    context = multiprocessing.get_context("fork")
    scheme = cls(context=context)
    scheme.init_on_sender(model_id="policy", model=Probe(), num_workers=2)
    pipes = [context.Pipe(duplex=False) for _ in range(2)]
    procs = [
        context.Process(target=_receiver, args=(scheme, i, pipes[i][1]), daemon=True)
        for i in range(2)
    ]
    try:
        for p in procs:
            p.start()
        scheme.send(random_weights(1))
        latest = random_weights(2)
        scheme.send(latest)
        for reader, _ in pipes:
            assert reader.poll(30), "a receiver did not answer"
            version, w = reader.recv()
            assert version == 2
            assert torch.equal(torch.tensor(w, dtype=torch.float32), latest["w"])
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
        scheme.shutdown()


def test_mp_transport_applies_only_the_newest_snapshot():
    transport, model = MPTransport(), Probe()
    for version in (1, 2, 3):
        transport.send_weights(random_weights(version), version=version)
    assert torch.equal(transport.receive_weights(1.0, model=model)["w"], random_weights(3)["w"])
    assert transport.version == 3
    assert transport.receive_weights(0.0, model=model) is None
    transport.close()


def test_shared_mem_scheme_writes_one_copy_for_every_worker():
    scheme = SharedMemWeightSyncScheme()
    scheme.init_on_sender(model=Probe(), num_workers=4)
    transports = set(map(id, scheme.sender_transports.values()))
    assert len(transports) == 1
    assert isinstance(scheme.sender_transports[0], SharedMemTransport)
    assert scheme.sender_transports[0].weights["w"].is_shared()


@pytest.mark.parametrize("collector_cls", [MultiSyncCollector, MultiAsyncCollector])
@pytest.mark.parametrize("cls", SCHEMES)
def test_multi_process_collectors_take_weight_sync_schemes(collector_cls, cls):
    policy = probe_policy()
    collector = collector_cls(
        [make, make], policy, frames_per_batch=8, weight_sync_schemes={"policy": cls()}
    )
    try:
        assert collector.weight_updater is None
        batch = collector.next()
        assert (batch["probe"] == 0).all()
        weights = random_weights(7)
        collector.update_policy_weights_(TensorDict({"module": weights}, []))
        assert collector.policy_version == 1
        # Every worker's batch after the push was produced with the exact weights.
        seen = set()
        for _ in range(4):
            batch = collector.next()
            version = batch["collector", "policy_version"].reshape(-1, batch.shape[-1])
            probe = batch["probe"].reshape(-1, batch.shape[-1], 3)
            for row in range(probe.shape[0]):
                if (version[row] == 1).all():
                    assert torch.equal(probe[row], weights["w"].expand(probe.shape[1], 3))
                    seen.add(row)
        assert seen
    finally:
        collector.shutdown()
    for process in collector._procs:
        assert not process.is_alive()


def test_spawned_workers_receive_through_a_pipe_scheme():
    # One spawn case (tens of seconds on a loaded machine): the pipes travel through spawn's
    # pickling; the shared-memory copy does the same as the default weights' (tested there).
    layer = nn.Linear(1, 1)
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    policy = TensorDictModule(layer, in_keys=["observation"], out_keys=["action"])
    collector = MultiSyncCollector(
        [make],
        policy,
        frames_per_batch=4,
        total_frames=8,
        mp_start_method="spawn",
        weight_sync_schemes={"policy": MultiProcessWeightSyncScheme()},
    )
    batches = []
    for batch in collector:
        batches.append(batch)
        with torch.no_grad():
            layer.bias.fill_(1.0)
        collector.update_policy_weights_()
    collector.shutdown()
    assert (batches[0]["action"] == 0).all()
    assert (batches[1]["action"] == 1).all()
    assert (batches[1]["collector", "policy_version"] == 1).all()


def test_sync_collector_takes_weight_sync_schemes():
    policy = probe_policy()
    collector = SyncDataCollector(
        make(),
        policy,
        frames_per_batch=4,
        weight_sync_schemes={"policy": SharedMemWeightSyncScheme()},
    )
    weights = random_weights(3)
    collector.update_policy_weights_(TensorDict({"module": weights}, []))
    assert collector.policy_version == 1
    assert torch.equal(collector.next()["probe"][0, 0], weights["w"])
    collector.shutdown()


def test_a_push_to_a_dead_worker_fails_fast_naming_it():
    collector = MultiSyncCollector(
        [make, make],
        probe_policy(),
        frames_per_batch=8,
        weight_sync_schemes={"policy": MultiProcessWeightSyncScheme()},
    )
    collector.next()
    os.kill(collector._procs[1].pid, signal.SIGKILL)
    collector._procs[1].join(5)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker 1 \(pid \d+\) died"):
        collector.update_policy_weights_()
    assert time.monotonic() - start < 3.0
    collector.shutdown()
    for process in collector._procs:
        assert not process.is_alive()


def test_existing_weight_updaters_keep_working():
    policy = probe_policy()
    collector = SyncDataCollector(make(), policy, frames_per_batch=4)
    assert isinstance(collector.weight_updater, VanillaWeightUpdater)
    collector.update_policy_weights_(TensorDict({"module": random_weights(1)}, []))
    assert torch.equal(collector.next()["probe"][0, 0], random_weights(1)["w"])


def test_bad_scheme_arguments_raise_clear_errors():
    with pytest.raises(TypeError, match="expected weight_sync_schemes as a dict"):
        SyncDataCollector(make(), probe_policy(), frames_per_batch=4, weight_sync_schemes=[1])
    with pytest.raises(TypeError, match="got 'policy': str"):
        SyncDataCollector(
            make(), probe_policy(), frames_per_batch=4, weight_sync_schemes={"policy": "shared"}
        )
    policy = probe_policy()
    with pytest.raises(ValueError, match="weight_updater or weight_sync_schemes, not both"):
        SyncDataCollector(
            make(),
            policy,
            frames_per_batch=4,
            weight_updater=VanillaWeightUpdater.from_policy(policy),
            weight_sync_schemes={"policy": SharedMemWeightSyncScheme()},
        )
    with pytest.raises(KeyError, match="model_id 'critic' does not resolve"):
        SyncDataCollector(
            make(),
            policy,
            frames_per_batch=4,
            weight_sync_schemes={"critic": SharedMemWeightSyncScheme()},
        )
    with pytest.raises(ValueError, match=r"unknown backend 'carrier-pigeon'"):
        WeightSyncScheme.from_backend("carrier-pigeon")
    scheme = SharedMemWeightSyncScheme()
    with pytest.raises(RuntimeError, match="call init_on_sender before sending"):
        scheme.send()
    scheme.init_on_sender(model=Probe(), num_workers=2)
    with pytest.raises(ValueError, match=r"expected worker_idx in \[0, 2\), got 2"):
        scheme.init_on_receiver(model=Probe(), worker_idx=2)
    with pytest.raises(ValueError, match=r"unknown worker ids \[5\]"):
        scheme.send(worker_ids=[5])


def test_from_backend_builds_each_scheme():
    assert type(WeightSyncScheme.from_backend("shared")) is SharedMemWeightSyncScheme
    assert type(WeightSyncScheme.from_backend("thread")) is SharedMemWeightSyncScheme
    assert type(WeightSyncScheme.from_backend("multiprocessing")) is MultiProcessWeightSyncScheme
    assert type(WeightSyncScheme.from_backend("none")) is NoWeightSyncScheme
