import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, TensorDictRoundRobinWriter


def test_index_written_into_data_and_storage():
    storage = LazyTensorStorage(3)
    writer = TensorDictRoundRobinWriter()
    writer.register_storage(storage)
    td = TensorDict({"x": torch.arange(2)}, [2])
    writer.extend(td)
    td2 = TensorDict({"x": torch.arange(2, 4)}, [2])
    assert writer.extend(td2).tolist() == [2, 0]
    assert td2["index"].tolist() == [2, 0]
    assert storage.get(torch.arange(3))["index"].tolist() == [0, 1, 2]
    one = TensorDict({"x": torch.tensor(9)}, [])
    assert writer.add(one) == 1
    assert int(one["index"]) == 1


def test_ndim_two_index_is_flat_items():
    storage = LazyTensorStorage(8, ndim=2)
    writer = TensorDictRoundRobinWriter()
    writer.register_storage(storage)
    td = TensorDict({"x": torch.zeros(2, 2)}, [2, 2])
    writer.extend(td)
    assert td["index"].tolist() == [[0, 1], [2, 3]]
