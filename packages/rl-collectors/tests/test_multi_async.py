import os
import re
import signal
import threading
import time
from functools import partial

import pytest
import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule
from torch import nn

from rl_collectors import MultiaSyncDataCollector
from rl_core.testing import CountingEnv

make = partial(CountingEnv, max_count=4, batch_size=[2])


class Threshold(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs * 0 + self.bias > 0.5).long()


class FailingEnv(CountingEnv):
    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        raise OSError("FailingEnv: cannot reset")


def test_frames_and_versions():
    collector = MultiaSyncDataCollector(
        [make, make], None, frames_per_batch=8, total_frames=40, track_traj_ids=True
    )
    batches = list(collector)
    assert len(batches) == 5
    assert all(b.batch_size == torch.Size([2, 4]) for b in batches)
    assert collector._frames == 40
    assert all((b["collector", "policy_version"] == 0).all() for b in batches)
    collector.shutdown()
    assert not any(p.is_alive() for p in collector._procs)


def test_weights_reach_every_worker():
    policy = TensorDictModule(Threshold(), in_keys=["observation"], out_keys=["action"])
    collector = MultiaSyncDataCollector([make, make], policy, frames_per_batch=8)
    with torch.no_grad():
        policy.module.bias.fill_(1.0)
    collector.update_policy_weights_()
    seen = {}
    for _ in range(8):
        batch = collector.next()
        version = int(batch["collector", "policy_version"][0, 0])
        # The version says which weights produced the batch, and the output agrees.
        assert bool(batch["action"].all()) == (version == 1)
        seen.setdefault(version, 0)
        seen[version] += 1
    assert seen.get(1, 0) >= 2  # both workers moved on to the new weights
    collector.shutdown()


def _drain_until(collector: MultiaSyncDataCollector, deadline: float) -> None:
    for _ in collector:
        if time.monotonic() > deadline:
            return


def test_a_failing_worker_raises():
    collector = MultiaSyncDataCollector(
        [make, partial(FailingEnv, batch_size=[2])], None, frames_per_batch=8
    )
    # The failing worker dies at its first reset; the other one may deliver batches first,
    # as many as it makes while the failing one starts (many on a loaded machine): iterate
    # until the failure surfaces, for at most two minutes.
    deadline = time.monotonic() + 120
    with pytest.raises(RuntimeError, match=r"worker 1(.|\n)*cannot reset"):
        _drain_until(collector, deadline)
    assert not any(p.is_alive() for p in collector._procs)


class BigWeights(nn.Module):
    """128 MB of weights: a worker spends tens of milliseconds loading them."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(32 * 2**20))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs * 0 + self.weight[0] > 0.5).long()


def _call_with_deadline(function, seconds: float):
    """Runs ``function`` in a thread; returns its exception, or fails if it outlasts ``seconds``."""
    outcome = []

    def run() -> None:
        try:
            function()
            outcome.append(None)
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{function} still blocked after {seconds} s"
    return outcome[0]


def test_a_worker_killed_while_loading_weights_never_blocks_a_publish():
    policy = TensorDictModule(BigWeights(), in_keys=["observation"], out_keys=["action"])
    collector = MultiaSyncDataCollector([make], policy, frames_per_batch=2)
    worker = collector._procs[0]
    collector.next()  # the worker is up and has collected its next batch already
    collector.update_policy_weights_()
    # Taking that batch asks the worker for the next one, which starts with loading the new
    # weights (128 MB): kill it in the middle of that copy.
    collector.next()
    time.sleep(0.01)
    os.kill(worker.pid, signal.SIGKILL)
    worker.join(5)
    error = _call_with_deadline(collector.update_policy_weights_, 5.0)
    assert isinstance(error, RuntimeError)
    assert re.search(r"worker 0 \(pid \d+\) died with exit code -9", str(error))
    assert not worker.is_alive()
