import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, TensorDictRoundRobinWriter


def test_index_written_into_data_not_storage():
    storage = LazyTensorStorage(3)
    writer = TensorDictRoundRobinWriter()
    writer.register_storage(storage)
    td = TensorDict({"x": torch.arange(2)}, [2])
    writer.extend(td)
    td2 = TensorDict({"x": torch.arange(2, 4)}, [2])
    assert writer.extend(td2).tolist() == [2, 0]
    assert td2["index"].tolist() == [2, 0]
    assert list(storage.get(torch.arange(3)).keys()) == ["x"]
    # A batch that already holds an "index" (e.g. a sampled one) is stored without it.
    assert writer.extend(td2).tolist() == [1, 2]
    assert td2["index"].tolist() == [1, 2]
    one = TensorDict({"x": torch.tensor(9)}, [])
    assert writer.add(one) == 0
    assert int(one["index"]) == 0


def test_ndim_two_index_is_flat_items():
    storage = LazyTensorStorage(8, ndim=2)
    writer = TensorDictRoundRobinWriter()
    writer.register_storage(storage)
    td = TensorDict({"x": torch.zeros(2, 2)}, [2, 2])
    writer.extend(td)
    assert td["index"].tolist() == [[0, 1], [2, 3]]


def test_batch_larger_than_storage_marks_dropped_items():
    writer = TensorDictRoundRobinWriter()
    writer.register_storage(LazyTensorStorage(2))
    td = TensorDict({"x": torch.arange(3)}, [3])
    writer.extend(td)
    assert td["index"].tolist() == [-1, 1, 0]
