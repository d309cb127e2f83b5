"""prefill_replay_buffer: counts, chunks, and items that are the dataset's."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    SamplerWithoutReplacement,
    prefill_replay_buffer,
)


def _dataset(n: int, **kwargs) -> ReplayBuffer:
    dataset = ReplayBuffer(storage=LazyTensorStorage(n), **kwargs)
    dataset.extend(TensorDict({"obs": torch.arange(n).float().unsqueeze(-1) * 10}, [n]))
    return dataset


def test_copies_every_item_once_without_replacement():
    dataset = _dataset(250, sampler=SamplerWithoutReplacement())
    online = ReplayBuffer(storage=LazyTensorStorage(1000))
    out = prefill_replay_buffer(online, dataset, chunk_size=64)
    assert out is online
    assert len(online) == 250
    values = sorted(online.storage.get(torch.arange(250))["obs"].squeeze(-1).tolist())
    assert values == [10.0 * i for i in range(250)]


def test_n_samples_caps_and_defaults():
    online = ReplayBuffer(storage=LazyTensorStorage(1000))
    prefill_replay_buffer(online, _dataset(100), n_samples=37, chunk_size=10)
    assert len(online) == 37
    stored = online.storage.get(torch.arange(37))["obs"]
    assert bool(((stored % 10) == 0).all())
    assert bool(((stored >= 0) & (stored < 1000)).all())
    more = ReplayBuffer(storage=LazyTensorStorage(1000))
    prefill_replay_buffer(more, _dataset(30), n_samples=500)
    assert len(more) == 30


def test_into_a_list_storage():
    online = ReplayBuffer(storage=ListStorage(10))
    prefill_replay_buffer(online, _dataset(5), chunk_size=2)
    assert len(online) == 5


def test_errors():
    online = ReplayBuffer(storage=LazyTensorStorage(10))
    with pytest.raises(
        TypeError, match=r"expected dataset to be a ReplayBuffer, got str.*MinariExperienceReplay"
    ):
        prefill_replay_buffer(online, "minari:cartpole/random-v0")
    with pytest.raises(ValueError, match="expected chunk_size to be a positive int, got 0"):
        prefill_replay_buffer(online, _dataset(5), chunk_size=0)
    with pytest.raises(ValueError, match="expected n_samples to be a positive int, got -1"):
        prefill_replay_buffer(online, _dataset(5), n_samples=-1)
