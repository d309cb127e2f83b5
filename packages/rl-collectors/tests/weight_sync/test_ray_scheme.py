"""RayWeightSyncScheme through a real local Ray instance, driven by RayCollector."""

import sys
import time
from functools import partial

import pytest
import torch
from tensordict.nn import TensorDictModule
from testkit.ray_cluster import local_ray_cluster
from torch import nn

from rl_collectors import RayCollector
from rl_collectors.weight_sync import RayWeightSyncScheme, WeightSyncScheme
from rl_core.testing import CountingEnv

pytestmark = pytest.mark.ray

make = partial(CountingEnv, max_count=100, batch_size=[2])


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rlc-ray-", skip_reason='pip install "rl-collectors[ray]"') as ray:
        # pytest's importlib mode imports this module under a name Ray's workers cannot
        # import: its functions and classes travel by value
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield ray


class Probe(nn.Module):
    """Writes its weights into the batch: what an actor holds is read bit for bit."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(3))

    def forward(self, obs):
        action = torch.zeros(*obs.shape[:-1], 1, dtype=torch.long)
        return action, self.w.detach().expand(*obs.shape[:-1], 3).clone()


def probe_policy():
    return TensorDictModule(Probe(), in_keys=["observation"], out_keys=["action", "probe"])


def test_weights_reach_the_actors_bit_identical_and_versioned(ray_cluster):
    assert type(WeightSyncScheme.from_backend("ray")) is RayWeightSyncScheme
    policy = probe_policy()
    scheme = RayWeightSyncScheme()
    collector = RayCollector(
        make,
        policy,
        frames_per_batch=8,
        num_collectors=2,
        weight_sync_schemes={"policy": scheme},
    )
    try:
        assert collector.weight_updater is None
        first = collector.next()
        assert (first["probe"] == 0).all()
        weights = torch.tensor([0.1, -2.5, 3e-7])
        with torch.no_grad():
            policy.module.w.copy_(weights)
        collector.update_policy_weights_()
        assert collector.policy_version == 1
        batch = collector.next()  # [actor, env, time, 3]
        assert torch.equal(batch["probe"], weights.expand(2, 2, 2, 3))
        assert (batch["collector", "policy_version"] == 1).all()
        # Only actor 1 gets version 2.
        with torch.no_grad():
            policy.module.w.copy_(-weights)
        collector.update_policy_weights_(worker_ids=[1])
        batch = collector.next()
        assert torch.equal(batch["probe"][0], weights.expand(2, 2, 3))
        assert torch.equal(batch["probe"][1], -weights.expand(2, 2, 3))
        assert batch["collector", "policy_version"][:, 0, 0].tolist() == [1, 2]
        with pytest.raises(ValueError, match=r"unknown worker ids \[5\]; the workers are 0 to 1"):
            collector.update_policy_weights_(worker_ids=[5])
        assert collector.policy_version == 2
        mailbox = scheme._mailbox
    finally:
        collector.shutdown()
    # Shutdown ended the scheme's mailbox actor too.
    with pytest.raises(ray_cluster.exceptions.RayActorError):
        ray_cluster.get(mailbox.get.remote(0, 0), timeout=30)


def test_a_killed_actor_is_named(ray_cluster):
    collector = RayCollector(
        make,
        probe_policy(),
        frames_per_batch=8,
        num_collectors=2,
        weight_sync_schemes={"policy": RayWeightSyncScheme()},
    )
    collector.next()
    ray_cluster.kill(collector.remote_collectors[1])
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"collector actor 1 died \(.*ActorDiedError"):
        collector.next()
    assert time.monotonic() - start < 10
    assert collector._closed
