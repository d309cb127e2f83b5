"""``compilable=`` (TorchRL's keyword) on storages, writers and buffers."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    CompressedListStorage,
    LazyMemmapStorage,
    LazyStackStorage,
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    RoundRobinWriter,
    TensorDictMaxValueWriter,
    TensorDictReplayBuffer,
    TensorDictRoundRobinWriter,
    TensorStorage,
)


@pytest.mark.parametrize("compilable", [False, True])
@pytest.mark.parametrize(
    "make",
    [
        lambda c, tmp: ListStorage(5, compilable=c),
        lambda c, tmp: LazyStackStorage(5, compilable=c),
        lambda c, tmp: LazyTensorStorage(5, compilable=c),
        lambda c, tmp: LazyMemmapStorage(5, scratch_dir=tmp / "m", compilable=c),
        lambda c, tmp: TensorStorage(TensorDict({"x": torch.zeros(5)}, [5]), compilable=c),
    ],
    ids=["list", "lazy_stack", "lazy_tensor", "lazy_memmap", "tensor"],
)
def test_storages_accept_compilable_and_behave_alike(make, compilable, tmp_path):
    # TorchRL's composable-buffer tests build storage(size, compilable=...), writer(compilable=...)
    # and buffer(..., compilable=...): the same items come back either way.
    storage = make(compilable, tmp_path)
    assert storage.compilable is compilable
    buffer = TensorDictReplayBuffer(
        storage=storage,
        writer=TensorDictRoundRobinWriter(compilable=compilable),
        batch_size=3,
        compilable=compilable,
    )
    buffer.extend(TensorDict({"x": torch.arange(7.0)}, [7]))
    assert len(buffer) == 5
    assert sorted(buffer[:]["x"].tolist()) == [2.0, 3.0, 4.0, 5.0, 6.0]


def test_compressed_list_and_writers_accept_compilable():
    pytest.importorskip("zstandard", reason='pip install "rl-buffers[compress]"')
    assert CompressedListStorage(3, compilable=True).compilable is True
    assert RoundRobinWriter(True).compilable is True
    assert TensorDictMaxValueWriter(rank_key="r", compilable=True).compilable is True


def test_buffer_passes_compilable_to_its_default_storage_and_writer():
    buffer = ReplayBuffer(compilable=True)
    assert buffer.compilable
    assert buffer.storage.compilable
    assert buffer.writer.compilable
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(4), compilable=True)
    assert type(buffer.writer) is TensorDictRoundRobinWriter
    assert buffer.writer.compilable
    assert not buffer.storage.compilable  # a given storage keeps its own flag
    assert not ReplayBuffer().storage.compilable


@pytest.mark.parametrize(
    "build",
    [
        lambda: LazyTensorStorage(3, compilable="yes"),
        lambda: ListStorage(3, compilable=1),
        lambda: RoundRobinWriter(compilable=None),
        lambda: ReplayBuffer(compilable="True"),
    ],
)
def test_compilable_must_be_a_bool(build):
    with pytest.raises(TypeError, match="expected compilable to be a bool, got"):
        build()


@pytest.mark.compile
@pytest.mark.parametrize("compilable", [False, True])
def test_tensor_storage_set_traces_in_one_graph(compilable):
    # TorchRL's expectation: a compilable storage's set runs under
    # torch.compile(fullgraph=True) and counts what was written.
    storage = LazyTensorStorage(100, compilable=compilable)
    data = torch.arange(25).unsqueeze(-1)
    storage.set(torch.arange(25), data)

    @torch.compile(fullgraph=True)
    def write(cursor, value):
        storage.set(cursor, value)

    write(torch.arange(25, 50), data)
    write(torch.arange(50, 75), data)
    assert len(storage) == 75
    assert storage.next_row == 75
    torch.testing.assert_close(storage[:75], data.repeat(3, 1))


def test_delayed_init_takes_only_false():
    # TorchRL's keyword (test_pickable passes delayed_init=False); True is not built.
    buffer = ReplayBuffer(storage=LazyTensorStorage(3), delayed_init=False)
    assert len(buffer) == 0
    with pytest.raises(ValueError, match=r"delayed_init=True is not supported"):
        TensorDictReplayBuffer(storage=LazyTensorStorage(3), delayed_init=True)
