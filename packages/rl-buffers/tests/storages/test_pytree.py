"""Tensor storages given mappings of tensors (TorchRL's "pytree" data)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torch.utils._pytree import tree_map

from rl_buffers import LazyMemmapStorage, LazyTensorStorage, ReplayBuffer, TensorStorage


def _batch(n: int, start: float = 0.0) -> dict:
    values = torch.arange(start, start + n)
    return {
        "a": values.long().unsqueeze(-1),
        "b": {"c": [values.unsqueeze(-1).expand(n, 2) * 10, (values + 0.5,)]},
        30: values * 2,
    }


@pytest.mark.parametrize("storage_type", [LazyTensorStorage, LazyMemmapStorage])
def test_dict_data_is_written_and_read_back_in_its_structure(storage_type, tmp_path):
    kwargs = {"scratch_dir": tmp_path / "m"} if storage_type is LazyMemmapStorage else {}
    storage = storage_type(10, **kwargs)
    storage.set(torch.arange(3), _batch(3))
    storage.set(range(3, 5), _batch(2, start=3.0))
    assert len(storage) == 5
    got = storage.get(torch.tensor([4, 0]))
    assert got["a"].tolist() == [[4], [0]]
    assert got["a"].dtype == torch.long
    assert got["b"]["c"][0].tolist() == [[40.0, 40.0], [0.0, 0.0]]
    assert got["b"]["c"][1][0].tolist() == [4.5, 0.5]
    assert got[30].tolist() == [8.0, 0.0]
    one = storage[2]  # an item: no batch dim
    assert one["a"].tolist() == [2]
    assert one[30].item() == 4.0


def test_tensor_storage_built_on_dict_data_sets_and_gets_with_ranges():
    data = _batch(10)
    storage = TensorStorage(data)
    storage.set(range(10), tree_map(torch.zeros_like, data))
    for leaf in torch.utils._pytree.tree_leaves(storage.get(range(10))):
        assert leaf.shape[0] == 10
        assert (leaf == 0).all()
    with pytest.raises(TypeError, match="not supported by state_dict"):
        storage.state_dict()


def test_replay_buffer_extends_adds_and_samples_dict_data():
    buffer = ReplayBuffer(storage=LazyTensorStorage(4), batch_size=3)
    buffer.extend({"obs": torch.arange(6.0), "act": torch.arange(6)})  # keeps the last 4
    buffer.add({"obs": torch.tensor(9.0), "act": torch.tensor(9)})
    assert len(buffer) == 4
    assert buffer[:]["obs"].tolist() == [4.0, 5.0, 9.0, 3.0]
    batch = buffer.sample()
    assert set(batch) == {"obs", "act"}
    assert batch["obs"].shape == (3,)
    assert (batch["obs"] == batch["act"].float()).all()


def test_dict_data_errors_name_what_was_expected():
    storage = LazyTensorStorage(5)
    storage.set(torch.arange(2), {"a": torch.zeros(2)})
    with pytest.raises(ValueError, match=r"expected items of the stored structure"):
        storage.set(torch.arange(2), {"b": torch.zeros(2)})
    with pytest.raises(TypeError, match=r"holds mapping items.*got Tensor"):
        storage.set(torch.arange(2), torch.zeros(2))
    with pytest.raises(TypeError, match=r"leaf of the mapping to be a tensor, got str at \['a'\]"):
        LazyTensorStorage(5).set(torch.arange(2), {"a": "text"})
    with pytest.raises(ValueError, match=r"share the batch shape \(2,\).*got \(3,\) at \['b'\]"):
        LazyTensorStorage(5).set(torch.arange(2), {"a": torch.zeros(2), "b": torch.zeros(3)})
    tds = LazyTensorStorage(5)
    tds.set(torch.arange(2), TensorDict({"a": torch.zeros(2)}, [2]))
    with pytest.raises(TypeError, match="holds TensorDicts; expected the same, got a mapping"):
        tds.set(torch.arange(2), {"a": torch.zeros(2)})
