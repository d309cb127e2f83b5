"""ImmutableDatasetWriter: every write refused, naming the buffer, nothing written."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import ImmutableDatasetWriter, LazyTensorStorage, TensorDictReplayBuffer


def _buffer(writer: ImmutableDatasetWriter) -> TensorDictReplayBuffer:
    data = TensorDict({"obs": torch.arange(4.0)}, [4])
    storage = LazyTensorStorage(4)
    storage.set(slice(0, 4), data)
    return TensorDictReplayBuffer(storage=storage, writer=writer, batch_size=2)


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda rb: rb.extend(TensorDict({"obs": torch.zeros(2)}, [2])), "extend"),
        (lambda rb: rb.add(TensorDict({"obs": torch.zeros(())}, [])), "add"),
        (lambda rb: rb.empty(), "empty"),
    ],
)
def test_writes_are_refused_naming_the_dataset(call, what):
    buffer = _buffer(ImmutableDatasetWriter("D4RLExperienceReplay('demo')"))
    with pytest.raises(
        RuntimeError,
        match=rf"D4RLExperienceReplay\('demo'\) is a read-only dataset: {what} refused",
    ):
        call(buffer)
    assert buffer[:]["obs"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert len(buffer) == 4
    assert buffer.sample().shape == (2,)


def test_without_a_name_the_storage_is_named():
    buffer = _buffer(ImmutableDatasetWriter())
    with pytest.raises(RuntimeError, match=r"the buffer over LazyTensorStorage\(max_size=4"):
        buffer.extend(TensorDict({"obs": torch.zeros(2)}, [2]))


def test_dataset_name_must_be_a_string():
    with pytest.raises(TypeError, match="expected dataset to be a str"):
        ImmutableDatasetWriter(3)


def test_setitem_is_refused_too():
    buffer = _buffer(ImmutableDatasetWriter("demo"))
    with pytest.raises(RuntimeError, match="demo is a read-only dataset: write_at refused"):
        buffer[0:2] = TensorDict({"obs": torch.zeros(2)}, [2])
    assert buffer[:]["obs"].tolist() == [0.0, 1.0, 2.0, 3.0]
