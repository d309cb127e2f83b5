import pytest
import torch

from rl_buffers import LazyTensorStorage, ListStorage, RoundRobinWriter
from rl_buffers.writers.round_robin import consecutive


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


@pytest.mark.parametrize(("start", "stop"), [(0, 256), (199_744, 200_000), (5, 5)])
def test_consecutive_is_arange(start, stop):
    # The oracle: torch.arange's values, dtype and device, built by numpy on the CPU path.
    got, expected = consecutive(start, stop), torch.arange(start, stop)
    assert got.dtype == expected.dtype == torch.int64
    assert got.device == expected.device
    assert torch.equal(got, expected)


def test_consecutive_follows_the_default_device():
    # A device context is a torch function mode: torch.arange then decides the device.
    with torch.device("meta"):
        index = consecutive(2, 6)
    assert index.device.type == "meta"
    assert index.shape == (4,)
    assert index.dtype == torch.int64


def test_extend_returns_the_rows_as_arange_would():
    writer = RoundRobinWriter()
    writer.register_storage(LazyTensorStorage(10))
    first = writer.extend(torch.zeros(4, 2))
    assert torch.equal(first, torch.arange(4))
    wrapped = writer.extend(torch.zeros(8, 2))  # 4..9, then 0 and 1 (a tensor index)
    assert wrapped.tolist() == [4, 5, 6, 7, 8, 9, 0, 1]
    assert wrapped.dtype == torch.int64
