"""Replay buffers, storages and samplers, as a TorchRL user tests them."""

import pytest
import torch
from tensordict import TensorDict
from torchrl.data import (
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
)
from torchrl.data.replay_buffers import samplers
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement


def make_data(n):
    return TensorDict(
        {"obs": torch.arange(n, dtype=torch.float32).unsqueeze(-1), "index": torch.arange(n)},
        batch_size=[n],
    )


@pytest.mark.parametrize("storage", [LazyTensorStorage, ListStorage])
def test_extend_and_sample(storage):
    rb = ReplayBuffer(storage=storage(100), batch_size=8)
    rb.extend(make_data(20))
    assert len(rb) == 20
    sample = rb.sample()
    assert sample.batch_size == (8,)
    assert (sample["obs"].squeeze(-1) == sample["index"].float()).all()


def test_lazy_storage_overwrites_oldest():
    rb = ReplayBuffer(
        storage=LazyTensorStorage(10), batch_size=10, sampler=samplers.RandomSampler()
    )
    rb.extend(make_data(15))
    assert len(rb) == 10
    indices = set(rb.sample()["index"].tolist())
    assert indices <= set(range(5, 15))


def test_sampler_without_replacement_visits_everything():
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(12), sampler=SamplerWithoutReplacement(), batch_size=4
    )
    rb.extend(make_data(12))
    seen = torch.cat([rb.sample()["index"] for _ in range(3)])
    assert sorted(seen.tolist()) == list(range(12))


def test_prioritized_buffer_prefers_high_priority():
    torch.manual_seed(0)
    rb = TensorDictPrioritizedReplayBuffer(
        alpha=1.0, beta=1.0, storage=LazyTensorStorage(4), batch_size=400
    )
    data = make_data(4)
    rb.extend(data)
    data["td_error"] = torch.tensor([0.0, 0.0, 0.0, 10.0])
    rb.update_tensordict_priority(data)
    sample = rb.sample()
    assert (sample["index"] == 3).float().mean() > 0.9
    assert "priority_weight" in sample.keys()


def test_list_storage_holds_python_objects():
    rb = ReplayBuffer(storage=ListStorage(10), batch_size=3)
    rb.extend(["a", "b", "c", "d"])
    sample = rb.sample()
    assert len(sample) == 3
    assert set(sample) <= {"a", "b", "c", "d"}
