import os
import signal
import time
from functools import partial

import pytest
import torch
from tensordict.nn import TensorDictModule
from torch import nn

from rl_collectors import BaseCollector, MultiCollector
from rl_core.testing import CountingEnv

make = partial(CountingEnv, max_count=4, batch_size=[2])


class Threshold(nn.Module):
    """action = 1 when bias > 0.5: the weights alone decide the output."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs * 0 + self.bias > 0.5).long()


def threshold_policy():
    return TensorDictModule(Threshold(), in_keys=["observation"], out_keys=["action"])


def counts(batch):
    """The observations of a batch as a sorted list: order-independent content."""
    return sorted(batch["observation"].flatten().tolist())


def test_sync_gathers_every_worker():
    collector = MultiCollector([make, make], None, sync=True, frames_per_batch=16, total_frames=32)
    assert isinstance(collector, BaseCollector)
    assert type(collector.collector).__name__ == "MultiSyncDataCollector"
    batches = list(collector)
    assert [b.batch_size for b in batches] == [torch.Size([2, 2, 4])] * 2
    # CountingEnv(max_count=4) with the random policy's 0/1 actions: each worker's first
    # batch starts at 0 in both envs; counts stay in [0, 4].
    assert (batches[0]["observation"][:, :, 0] == 0).all()
    observed = torch.tensor(counts(batches[1]))
    assert ((observed >= 0) & (observed <= 4)).all()
    processes = list(collector.collector._procs)
    collector.shutdown()
    assert not any(p.is_alive() for p in processes)


def test_async_yields_each_worker_batch_and_counts_frames():
    collector = MultiCollector(
        make, None, num_workers=2, sync=False, frames_per_batch=10, total_frames=40
    )
    assert type(collector.collector).__name__ == "MultiaSyncDataCollector"
    batches = list(collector)
    assert [b.batch_size for b in batches] == [torch.Size([2, 5])] * 4
    assert collector.collector._frames == 40
    processes = list(collector.collector._procs)
    collector.shutdown()
    assert not any(p.is_alive() for p in processes)


@pytest.mark.parametrize("sync", [True, False])
def test_weights_reach_the_workers(sync):
    policy = threshold_policy()
    collector = MultiCollector([make, make], policy, sync=sync, frames_per_batch=8)
    assert collector.next()["action"].sum() == 0
    with torch.no_grad():
        policy.module.bias.fill_(1.0)
    collector.update_policy_weights_()
    assert collector.policy_version == 1
    seen = set()
    while len(seen) < (1 if sync else 2):  # async: until every worker sent new weights' batch
        batch = collector.next()
        if (batch["collector", "policy_version"] == 1).all():
            assert batch["action"].all()
            seen.add(len(seen))
    collector.shutdown()


def test_a_killed_worker_is_named():
    collector = MultiCollector([make, make], None, sync=True, frames_per_batch=8)
    collector.next()
    pid = collector.collector._procs[1].pid
    os.kill(pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"worker 1 \(pid {pid}\) died with exit code -9"):
        collector.next()
    assert time.monotonic() - start < 5
    assert not any(p.is_alive() for p in collector.collector._procs)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="expected sync as a bool, got str"):
        MultiCollector([make], None, sync="yes", frames_per_batch=4)
    with pytest.raises(ValueError, match="a single env factory needs num_workers="):
        MultiCollector(make, None, frames_per_batch=4)
    with pytest.raises(ValueError, match="num_workers=3 but create_env_fn lists 2 factories"):
        MultiCollector([make, make], None, num_workers=3, frames_per_batch=4)
    with pytest.raises(ValueError, match=r"expected num_workers as an int >= 1, got 0"):
        MultiCollector(make, None, num_workers=0, frames_per_batch=4)
    with pytest.raises(TypeError, match="expected create_env_fn as an env factory or a list"):
        MultiCollector(3, None, num_workers=1, frames_per_batch=4)
