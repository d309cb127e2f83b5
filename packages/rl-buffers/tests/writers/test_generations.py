"""RoundRobinWriter(track_generations=True): each row's write count, as TorchRL's writers'."""

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    RoundRobinWriter,
    TensorDictMaxValueWriter,
    TensorDictReplayBuffer,
    TensorDictRoundRobinWriter,
)


def _tracking(size):
    return ReplayBuffer(
        storage=LazyTensorStorage(size), writer=RoundRobinWriter(track_generations=True)
    )


def test_stamps_count_writes_per_row():
    # 4 rows; writes: 0..3 (each row once: stamps 0), then 3 more (rows 0, 1, 2 again)
    rb = _tracking(4)
    assert rb.writer.tracks_generations is True
    index = rb.extend(torch.arange(4))
    assert rb.writer.generations_of(index).tolist() == [0, 0, 0, 0]
    rb.extend(torch.arange(3))
    assert rb.writer.generations_of(torch.arange(4)).tolist() == [1, 1, 1, 0]
    rb.add(torch.tensor(9))  # row 3
    assert rb.writer.generations_of(torch.arange(4)).tolist() == [1, 1, 1, 1]


def test_a_batch_longer_than_the_storage_counts_every_pass():
    # 10 items into 4 rows from row 0: rows 0, 1 written 3 times, rows 2, 3 twice
    rb = _tracking(4)
    rb.extend(torch.arange(10))
    assert rb.writer.generations_of(torch.arange(4)).tolist() == [2, 2, 1, 1]
    assert rb.storage.get(torch.arange(4)).tolist() == [8, 9, 6, 7]


def test_unwritten_and_out_of_range_rows_read_minus_one():
    rb = _tracking(4)
    rb.extend(torch.arange(2))
    assert rb.writer.generations_of(torch.tensor([0, 1, 2, 3, -1, 7])).tolist() == [
        0,
        0,
        -1,
        -1,
        -1,
        -1,
    ]
    assert rb.writer.generations_of(1).shape == ()


def test_empty_bumps_written_rows_only():
    rb = _tracking(4)
    rb.extend(torch.arange(2))
    rb.empty()
    assert rb.writer.generations_of(torch.arange(4)).tolist() == [1, 1, -1, -1]
    rb.extend(torch.arange(3))
    assert rb.writer.generations_of(torch.arange(4)).tolist() == [2, 2, 0, -1]


def test_stamps_live_on_the_storage_shared_by_buffers():
    storage = LazyTensorStorage(4)
    tracking = ReplayBuffer(storage=storage, writer=RoundRobinWriter(track_generations=True))
    other = ReplayBuffer(storage=storage)  # does not track, still bumps the stamps
    index = tracking.extend(torch.arange(4))
    before = tracking.writer.generations_of(index)
    other.extend(torch.arange(10, 12))  # rows 0 and 1
    assert (tracking.writer.generations_of(index) != before).tolist() == [
        True,
        True,
        False,
        False,
    ]
    assert other.writer.tracks_generations is False
    assert other.writer.generations_of(index).tolist() == [-1, -1, -1, -1]
    assert storage.slot_generations.tolist() == [1, 1, 0, 0]


def test_write_at_bumps_its_rows():
    writer = RoundRobinWriter(track_generations=True)
    writer.register_storage(LazyTensorStorage(4))
    writer.extend(torch.arange(4))
    writer.write_at(torch.tensor([0, 1]), torch.tensor([10, 11]))
    assert writer.generations_of(torch.arange(4)).tolist() == [1, 1, 0, 0]


def test_sample_info_and_tensordict_batch_carry_the_stamps():
    rb = _tracking(8)
    rb.extend(torch.arange(8))
    rb.extend(torch.arange(2))  # rows 0, 1 at generation 1
    _, info = rb.sample(16, return_info=True)
    assert info["index_generation"].tolist() == (info["index"] < 2).long().tolist()
    td_rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(4),
        writer=TensorDictRoundRobinWriter(track_generations=True),
        batch_size=6,
    )
    td_rb.extend(TensorDict({"a": torch.arange(5)}, [5]))  # row 0 twice
    batch = td_rb.sample()
    expected = (batch["index"] == 0).long()
    assert batch["index_generation"].tolist() == expected.tolist()
    plain = TensorDictReplayBuffer(
        storage=LazyTensorStorage(4), writer=TensorDictMaxValueWriter(rank_key="a")
    )
    plain.extend(TensorDict({"a": torch.arange(4.0)}, [4]))
    _, info = plain.sample(2, return_info=True)
    assert "index_generation" not in info
    assert plain.writer.generations_of(torch.arange(2)).tolist() == [-1, -1]


def test_multidim_storage_stamps_rows():
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(12, ndim=2),
        writer=TensorDictRoundRobinWriter(track_generations=True),
    )
    rb.extend(TensorDict({"a": torch.zeros(4, 3)}, [4, 3]))
    rb.extend(TensorDict({"a": torch.zeros(1, 3)}, [1, 3]))  # row 0 again
    writer = rb.writer
    assert writer.generations_of(torch.tensor([0, 1])).tolist() == [1, 0]
    assert writer.generations_of((torch.tensor([0, 3]), torch.tensor([2, 1]))).tolist() == [1, 0]
    assert writer.generations_of(torch.tensor([[0, 2], [1, 1]])).tolist() == [1, 0]
    _, info = rb.sample(5, return_info=True)
    assert info["index_generation"].tolist() == (info["index"][0] == 0).long().tolist()


def test_state_dict_and_dumps_carry_the_stamps(tmp_path):
    rb = _tracking(4)
    rb.extend(torch.arange(5))
    restored = _tracking(4)
    restored.load_state_dict(rb.state_dict())
    assert restored.writer.generations_of(torch.arange(4)).tolist() == [1, 0, 0, 0]
    rb.writer.dumps(tmp_path)
    loose = RoundRobinWriter(track_generations=True)  # no storage yet
    loose.loads(tmp_path)
    assert loose.generations_of(torch.arange(4)).tolist() == [1, 0, 0, 0]
    storage = LazyTensorStorage(4)
    loose.register_storage(storage)
    assert storage.slot_generations.tolist() == [1, 0, 0, 0]


def test_list_storage_grows_its_stamps():
    writer = RoundRobinWriter(track_generations=True)
    writer.register_storage(ListStorage(3))
    writer.add("a")
    writer.extend(["b", "c", "d"])
    assert writer.generations_of(torch.arange(3)).tolist() == [1, 0, 0]


def test_bad_arguments():
    with pytest.raises(TypeError, match="expected track_generations to be a bool, got str"):
        RoundRobinWriter(track_generations="yes")
    writer = _tracking(2).writer
    with pytest.raises(TypeError, match=r"expected integer rows, got a torch\.float32"):
        writer.generations_of(torch.tensor([0.0]))
