import itertools
import os
import sys
from functools import partial

import pytest
import torch
from tensordict import TensorDict
from testkit.ray_cluster import local_ray_cluster

from rl_buffers import (
    LazyTensorStorage,
    RayReplayBuffer,
    TensorDictPrioritizedReplayBuffer,
)


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rlb-ray-", skip_reason='pip install "rl-buffers[ray]"') as ray:
        # this module is imported by pytest's importlib mode, which Ray's workers cannot
        # repeat: its classes travel by value
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield ray


def remote_write(buffer, writer_id, batches, size):
    """A stand-in for a remote collector: writes batches of ids into the shared buffer."""
    for batch in range(batches):
        ids = writer_id * 1000 + batch * size + torch.arange(size)
        data = TensorDict({"id": ids, "obs": ids.float().unsqueeze(-1)}, batch_size=[size])
        if batch % 2:
            buffer.extend_async(data)  # (ordered after this writer's earlier writes)
        else:
            buffer.extend(data)
    return os.getpid()


@pytest.mark.ray
def test_remote_writers_and_learner_share_one_buffer(ray_cluster, tmp_path):
    ray = ray_cluster
    buffer = RayReplayBuffer(
        replay_buffer_cls=TensorDictPrioritizedReplayBuffer,
        alpha=1.0,
        beta=1.0,
        storage=partial(LazyTensorStorage, 200),  # a constructor, called in the actor
        batch_size=64,
        remote_config={"num_cpus": 0},
        delayed_init=True,
    )
    assert buffer._actor is None  # delayed_init: nothing started yet
    with pytest.raises(RuntimeError, match="Cannot sample from an empty storage"):
        buffer.sample()  # the remote error, raised here with its type
    actor_pid = ray.get(buffer.actor.pid.remote())
    assert actor_pid != os.getpid()

    writer = ray.remote(num_cpus=1)(remote_write)
    pids = ray.get([writer.remote(buffer, writer_id, 5, 10) for writer_id in (1, 2)])
    assert not {os.getpid(), actor_pid} & set(pids)  # writers in other processes
    ray.get(buffer.actor.length.remote())  # (the last async writes are applied before this)
    assert len(buffer) == 100
    expected = {w * 1000 + i for w in (1, 2) for i in range(50)}
    assert set(buffer[:]["id"].tolist()) == expected
    # each writer's batches are in the order it sent them, sync and async mixed
    stored = buffer[:]["id"].tolist()
    for w in (1, 2):
        mine = [value for value in stored if value // 1000 == w]
        assert mine == sorted(mine)

    # the learner: sample, update priorities remotely, sample again through them
    batch = buffer.sample()
    assert batch.batch_size == torch.Size([64])
    assert set(batch["id"].tolist()) <= expected
    assert torch.equal(batch["obs"].squeeze(-1), batch["id"].float())
    everything = buffer[:]
    favourite = int(everything["id"][17])
    everything["index"] = torch.arange(100)
    everything["td_error"] = torch.ones(100, dtype=torch.float64)
    buffer.update_tensordict_priority(everything)
    everything["td_error"] = (everything["id"] == favourite).double()
    # sent without waiting; the actor applies this handle's calls in order
    ref = buffer.update_priority_async(everything["index"], everything["td_error"])
    batch = buffer.sample()
    # p = (priority + 1e-8) ** alpha: 1 for the favourite, 1e-8 for the 99 others
    assert (batch["id"] == favourite).all()
    assert ray.get(ref) is None
    with pytest.raises(IndexError, match=r"\[0, 100\)"):
        buffer.update_priority(torch.tensor([150]), 1.0)  # a slot no write has filled

    # checkpoints are written by the actor and read back after emptying it
    buffer.dumps(tmp_path / "ckpt")
    state = buffer.state_dict()
    buffer.empty()
    assert len(buffer) == 0
    buffer.loads(tmp_path / "ckpt")
    assert torch.equal(buffer[:]["id"], everything["id"])
    assert (buffer.sample()["id"] == favourite).all()  # the priorities came back too
    buffer.empty()
    buffer.load_state_dict(state)
    assert len(buffer) == 100
    batches = list(itertools.islice(buffer, 3))  # no epochs: iteration goes on
    assert [batch.batch_size for batch in batches] == [torch.Size([64])] * 3
    buffer.shutdown()
    assert buffer._actor is None
    assert ray.is_initialized()  # the buffers did not own Ray


def test_bad_arguments():
    with pytest.raises(TypeError, match="a ReplayBuffer subclass, got <class 'dict'>"):
        RayReplayBuffer(replay_buffer_cls=dict)
    with pytest.raises(TypeError, match="transform_factory to be callable, got int"):
        RayReplayBuffer(transform_factory=3)
