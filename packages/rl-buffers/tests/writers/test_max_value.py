import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    ReplayBuffer,
    TensorDictMaxValueWriter,
    TensorDictReplayBuffer,
)


def test_keeps_highest_ranked_items():
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(3), writer=TensorDictMaxValueWriter(rank_key="score")
    )
    scores = torch.tensor([5.0, 1.0, 3.0, 0.5, 4.0, 9.0, 2.0])
    for chunk in scores.split(2):
        buffer.extend(TensorDict({"score": chunk, "id": chunk * 10}, [chunk.numel()]))
    kept = buffer.storage.get(torch.arange(3))
    assert sorted(kept["score"].tolist()) == [4.0, 5.0, 9.0]
    assert (kept["id"] == kept["score"] * 10).all()


def test_reduction_over_features_and_errors():
    storage = LazyTensorStorage(1)
    writer = TensorDictMaxValueWriter(reduction="max")
    writer.register_storage(storage)
    writer.extend(TensorDict({"next": {"reward": torch.tensor([[1.0, 5.0], [4.0, 4.0]])}}, [2]))
    assert storage.get(torch.tensor([0]))["next", "reward"].tolist() == [[1.0, 5.0]]
    assert writer.add(TensorDict({"next": {"reward": torch.tensor([0.0, 0.0])}}, [])) == -1
    with pytest.raises(ValueError, match=r"expected reduction in \['max', 'mean', 'min', 'sum'\]"):
        TensorDictMaxValueWriter(reduction="median")
    with pytest.raises(KeyError, match="no rank_key 'score'"):
        TensorDictMaxValueWriter(rank_key="score").extend(TensorDict({"x": torch.zeros(1)}, [1]))


def test_state_round_trip():
    storage = LazyTensorStorage(2)
    writer = TensorDictMaxValueWriter(rank_key="r")
    writer.register_storage(storage)
    writer.extend(TensorDict({"r": torch.tensor([1.0, 2.0])}, [2]))
    other = TensorDictMaxValueWriter(rank_key="r")
    other.load_state_dict(writer.state_dict())
    other.register_storage(storage)
    assert other.extend(TensorDict({"r": torch.tensor([1.5])}, [1])).tolist() == [0]


def test_dumps_and_loads_through_a_folder_as_torchrl(tmp_path):
    storage = LazyTensorStorage(2)
    writer = TensorDictMaxValueWriter(rank_key="r")
    writer.register_storage(storage)
    writer.extend(TensorDict({"r": torch.tensor([1.0, 2.0])}, [2]))
    writer.dumps(tmp_path / "w")
    writer.dumps(tmp_path / "w")  # a second dump overwrites the first
    other = TensorDictMaxValueWriter(rank_key="r")
    other.loads(tmp_path / "w")
    other.register_storage(storage)
    # the loaded writer knows rank 1.0 sits in row 0: 1.5 replaces it there, 0.5 goes nowhere
    assert other.extend(TensorDict({"r": torch.tensor([1.5])}, [1])).tolist() == [0]
    assert other.add(TensorDict({"r": torch.tensor(0.5)}, [])) == -1
    with pytest.raises(FileNotFoundError, match=r"TensorDictMaxValueWriter.loads: .* is missing"):
        other.loads(tmp_path / "nothing")


@pytest.mark.parametrize(
    "data", [torch.zeros(3, 1), {"a": torch.zeros(3, 1)}], ids=["tensor", "dict"]
)
def test_data_that_is_not_a_tensordict_is_refused_as_torchrl_does(data):
    # TorchRL raises RuntimeError("... expects data to be a tensor collection"); the error here
    # is both a TypeError and a RuntimeError, and nothing is written.
    storage = LazyTensorStorage(4)
    buffer = ReplayBuffer(storage=storage, writer=TensorDictMaxValueWriter(rank_key="a"))
    for write in (buffer.add, buffer.extend):
        with pytest.raises(RuntimeError, match="expects data to be a tensor collection"):
            write(data)
        with pytest.raises(TypeError, match=r"got (Tensor|dict)\. Write TensorDicts"):
            write(data)
    assert len(buffer) == 0


def test_a_storage_of_several_dims_is_refused_at_construction():
    with pytest.raises(
        ValueError,
        match=r"not compatible with storages with more than one dimension: got LazyTensorStorage with ndim=2",
    ):
        TensorDictReplayBuffer(
            storage=LazyTensorStorage(10, ndim=2), writer=TensorDictMaxValueWriter()
        )


def test_cursor_is_the_next_free_row_then_zero_once_full():
    # TorchRL's writers' _cursor: the row the next item goes to while the storage fills,
    # back to 0 when it is full (the max-value writer then replaces rows by rank)
    writer = TensorDictMaxValueWriter(rank_key="r")
    writer.register_storage(LazyTensorStorage(3))
    assert writer._cursor == 0
    writer.extend(TensorDict({"r": torch.tensor([1.0, 2.0])}, [2]))
    assert writer._cursor == 2
    writer.extend(TensorDict({"r": torch.tensor([3.0, 4.0])}, [2]))
    assert writer._cursor == 0
    writer.extend(TensorDict({"r": torch.tensor([5.0])}, [1]))
    assert writer._cursor == 0
    restored = TensorDictMaxValueWriter(rank_key="r")
    half = TensorDictMaxValueWriter(rank_key="r")
    half.register_storage(LazyTensorStorage(3))
    half.add(TensorDict({"r": torch.tensor(1.0)}, []))
    restored.load_state_dict(half.state_dict())
    assert restored._cursor == 1
    half._empty()
    assert half._cursor == 0
