import pytest
import torch

from rl_buffers import LazyTensorStorage, ListStorage, RoundRobinWriter


def test_wraps_and_overwrites_oldest():
    storage = LazyTensorStorage(4)
    writer = RoundRobinWriter()
    writer.register_storage(storage)
    assert writer.extend(torch.arange(3.0)).tolist() == [0, 1, 2]
    assert writer.extend(torch.arange(3.0, 6.0)).tolist() == [3, 0, 1]
    assert storage.get(torch.arange(4)).tolist() == [4.0, 5.0, 2.0, 3.0]
    assert writer.add(torch.tensor(6.0)) == 2
    assert writer.state_dict() == {"cursor": 3}


def test_batch_larger_than_storage_keeps_last_items():
    storage = LazyTensorStorage(3)
    writer = RoundRobinWriter()
    writer.register_storage(storage)
    writer.extend(torch.arange(7.0))
    # As if written one by one: items 4, 5, 6 remain, 6 at row 0 (7 % 3 == 1 is next).
    assert storage.get(torch.arange(3)).tolist() == [6.0, 4.0, 5.0]
    assert writer.state_dict()["cursor"] == 1


def test_list_storage_and_errors():
    writer = RoundRobinWriter()
    with pytest.raises(RuntimeError, match="no storage registered"):
        writer.extend([1])
    storage = ListStorage(2)
    writer.register_storage(storage)
    assert writer.extend(["a", "b", "c"]).tolist() == [1, 0]
    assert storage.get(torch.arange(2)) == ["c", "b"]
    with pytest.raises(ValueError, match="0-dim Tensor"):
        writer.extend(torch.tensor(1.0))
    writer._empty()
    assert writer.state_dict() == {"cursor": 0}
