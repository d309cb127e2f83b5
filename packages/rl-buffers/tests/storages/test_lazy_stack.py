"""LazyStackStorage: ragged TensorDict items come back as lazy stacks, unpadded."""

from __future__ import annotations

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack

from rl_buffers import LazyStackStorage, ListStorage, ReplayBuffer, TensorDictReplayBuffer


def _item(length: int) -> TensorDict:
    return TensorDict({"tokens": torch.arange(length), "reward": torch.tensor(float(length))}, [])


def test_ragged_items_round_trip_in_a_buffer():
    buffer = TensorDictReplayBuffer(storage=LazyStackStorage(), batch_size=6)
    buffer.extend(lazy_stack([_item(n) for n in (2, 5, 3)]))
    buffer.add(_item(7))
    assert len(buffer) == 4
    batch = buffer.sample()
    assert isinstance(batch, LazyStackedTensorDict)
    assert batch.batch_size == torch.Size([6])
    lengths = {0: 2, 1: 5, 2: 3, 3: 7}
    for td, index in zip(batch.tensordicts, batch["index"].tolist(), strict=True):
        assert torch.equal(td["tokens"], torch.arange(lengths[index]))
    assert torch.equal(
        batch["reward"], torch.tensor([float(lengths[i]) for i in batch["index"].tolist()])
    )


def test_defaults_get_and_stack_dim():
    storage = LazyStackStorage()
    assert repr(storage).startswith("LazyStackStorage(max_size=None")
    assert isinstance(storage, ListStorage)
    same = [TensorDict({"x": torch.full((2,), float(i))}, [2]) for i in range(3)]
    storage.set(torch.arange(3), same)
    assert torch.equal(storage.get(1)["x"], torch.ones(2))
    assert storage.get(torch.tensor([2, 0])).batch_size == torch.Size([2, 2])
    by_last = LazyStackStorage(3, stack_dim=-1)
    by_last.set(torch.arange(3), same)
    out = by_last.get([0, 1, 2])
    assert out.batch_size == torch.Size([2, 3])
    assert torch.equal(out["x"], torch.tensor([[0.0, 1, 2], [0, 1, 2]]))


def test_bounded_storage_wraps():
    buffer = ReplayBuffer(storage=LazyStackStorage(2), batch_size=2)
    for n in (1, 2, 3):
        buffer.add(_item(n))
    kept = sorted(int(buffer.storage.get(i)["tokens"].shape[0]) for i in range(2))
    assert kept == [2, 3]


def test_errors():
    with pytest.raises(ValueError, match="expected stack_dim to be an int, got 'last'"):
        LazyStackStorage(stack_dim="last")
    storage = LazyStackStorage(4)
    storage.set(torch.arange(2), ["a", "b"])
    with pytest.raises(TypeError, match="expected TensorDict items, got str"):
        storage.get(torch.tensor([0, 1]))


def test_an_empty_index_gives_an_empty_batch_with_the_stored_keys():
    # rb[[]] raised an IndexError ("expected at least one index")
    buffer = TensorDictReplayBuffer(storage=LazyStackStorage(), batch_size=2)
    assert buffer[[]].batch_size == (0,)  # nothing stored: no keys
    buffer.extend(lazy_stack([_item(n) for n in (2, 5)]))
    batch = buffer[[]]
    assert batch.batch_size == (0,)
    assert set(batch.keys()) == set(buffer[[0]].keys()) >= {"tokens", "reward"}
    assert buffer[torch.tensor([], dtype=torch.long)]["reward"].shape == (0,)
