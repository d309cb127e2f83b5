from functools import partial

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from testkit.ray_cluster import local_ray_cluster
from torch import nn

from rl_collectors import RayCollector, SyncDataCollector
from rl_core.testing import CountingEnv

pytestmark = pytest.mark.ray

make = partial(CountingEnv, max_count=100, batch_size=[2])


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rlc-ray-", skip_reason='pip install "rl-collectors[ray]"') as ray:
        yield ray


def linear_policy():
    """action = bias (weight 0): CountingEnv adds it to the count, so outputs show weights."""
    layer = nn.Linear(1, 1)
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    return TensorDictModule(layer, in_keys=["observation"], out_keys=["action"])


def test_sync_end_to_end_with_weight_broadcast(ray_cluster):
    policy = linear_policy()
    collector = RayCollector(
        make,
        policy,
        frames_per_batch=8,
        total_frames=24,
        num_collectors=2,
        collector_class=SyncDataCollector,
        collector_kwargs={"track_traj_ids": True},
    )
    batches = []
    for batch in collector:
        batches.append(batch)
        if len(batches) == 1:
            with torch.no_grad():
                policy.module.bias.fill_(1.0)
            collector.update_policy_weights_()
    assert [b.batch_size for b in batches] == [torch.Size([2, 2, 2])] * 3
    assert (batches[0]["action"] == 0).all()
    assert (batches[0]["collector", "policy_version"] == 0).all()
    for batch in batches[1:]:  # every actor runs the new weights
        assert (batch["action"] == 1).all()
        assert (batch["collector", "policy_version"] == 1).all()
    ids = batches[0]["collector", "traj_ids"]
    assert (ids[0] % 2 == 0).all()
    assert (ids[1] % 2 == 1).all()
    collector.shutdown()
    assert ray_cluster.is_initialized()  # the collector did not own Ray


def test_async_yields_as_batches_arrive(ray_cluster):
    collector = RayCollector([make, make], None, frames_per_batch=6, total_frames=30, sync=False)
    batches = list(collector)
    assert len(batches) == 5
    assert all(b.batch_size == torch.Size([2, 3]) for b in batches)
    assert collector.set_seed(3) == 5
    collector.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        collector.next()


def test_bad_arguments():
    with pytest.raises(ValueError, match="multiple of the 2 collectors"):
        RayCollector([make, make], None, frames_per_batch=7)
    with pytest.raises(ValueError, match="a list of 2 dicts"):
        RayCollector(make, None, frames_per_batch=8, num_collectors=2, remote_configs=[{}])


def ray_hosted_buffer(ray):
    """A test-local buffer hosted in a Ray actor (what RayReplayBuffer is): its handle pickles,
    so every collector actor extending it writes into the same list."""

    class Store:
        def __init__(self):
            self.items = []

        def extend(self, td):
            self.items.append(td)

        def get(self):
            return self.items

    class Handle:
        def __init__(self, actor):
            self.actor = actor

        def extend(self, td):
            ray.get(self.actor.extend.remote(td))

    return Handle(ray.remote(Store).options(num_cpus=0).remote())


def test_actors_extend_a_ray_hosted_buffer_directly(ray_cluster):
    from rl_collectors import RayWeightUpdater

    buffer = ray_hosted_buffer(ray_cluster)
    policy = linear_policy()
    collector = RayCollector(
        [make, make],
        policy,
        frames_per_batch=8,
        total_frames=32,
        sync=True,
        replay_buffer=buffer,
        collector_kwargs={"track_traj_ids": True},
    )
    assert isinstance(collector.weight_updater, RayWeightUpdater)
    assert collector.next() is None
    # An updater that skips every other push for each actor (max_interval=1).
    collector.weight_updater = RayWeightUpdater(
        TensorDict.from_module(policy), collector.remote_collectors, max_interval=1
    )
    with torch.no_grad():
        policy.module.bias.fill_(1.0)
    collector.update_policy_weights_()  # skipped by both actors
    assert collector.next() is None
    collector.update_policy_weights_()  # delivered: version 2
    assert collector.next() is None
    assert collector.next() is None
    with pytest.raises(StopIteration):
        collector.next()
    items = ray_cluster.get(buffer.actor.get.remote())
    collector.shutdown()
    assert len(items) == 8
    assert all(td.batch_size == torch.Size([2, 2]) for td in items)
    versions = [int(td["collector", "policy_version"].unique()) for td in items]
    actions = [int(td["action"].unique()) for td in items]
    assert versions == [0, 0, 0, 0, 2, 2, 2, 2]  # the skipped push never reached them
    assert actions == [0, 0, 0, 0, 1, 1, 1, 1]
    ids = {int(td["collector", "traj_ids"][0, 0]) % 2 for td in items}
    assert ids == {0, 1}  # labelled in the actors: unique across them
