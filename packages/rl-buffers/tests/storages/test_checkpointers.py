import multiprocessing
import os
import signal
import time

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    FlatStorageCheckpointer,
    H5StorageCheckpointer,
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    NestedStorageCheckpointer,
    TensorDictReplayBuffer,
    TensorStorageCheckpointer,
)


def episodes(lengths, start=0):
    """TED rows of consecutive episodes: observation t, ("next", "observation") t + 1."""
    rows = []
    step = start
    for length in lengths:
        obs = step + torch.arange(length + 1, dtype=torch.float32)
        done = torch.zeros(length, 1, dtype=torch.bool)
        done[-1] = True
        rows.append(
            TensorDict(
                {
                    "observation": obs[:-1].unsqueeze(-1).expand(length, 3).clone(),
                    "action": torch.arange(length),
                    "next": {
                        "observation": obs[1:].unsqueeze(-1).expand(length, 3).clone(),
                        "reward": torch.ones(length, 1),
                        "done": done,
                    },
                },
                [length],
            )
        )
        step += length + 100  # the next episode does not start where this one ended
    return torch.cat(rows)


CHECKPOINTERS = [
    TensorStorageCheckpointer,
    FlatStorageCheckpointer,
    NestedStorageCheckpointer,
    pytest.param(
        H5StorageCheckpointer,
        marks=pytest.mark.skipif(
            not __import__("importlib").util.find_spec("h5py"),
            reason='pip install "rl-buffers[h5py]"',
        ),
    ),
]


@pytest.mark.parametrize("checkpointer", CHECKPOINTERS)
@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage])
def test_buffer_round_trip_through_the_checkpointer(tmp_path, checkpointer, storage_cls):
    buffer = TensorDictReplayBuffer(storage=storage_cls(20), batch_size=4)
    buffer.storage.checkpointer = checkpointer()
    data = episodes([5, 9, 7, 6])  # 27 items into 20 slots: wrapped, next_row = 7
    buffer.extend(data)
    buffer.dumps(tmp_path / "ckpt")
    restored = TensorDictReplayBuffer(storage=storage_cls(20), batch_size=4)
    restored.storage.checkpointer = checkpointer()
    restored.loads(tmp_path / "ckpt")
    assert len(restored) == 20
    assert restored.storage.next_row == buffer.storage.next_row == 7
    expected = buffer[:]
    got = restored[:]
    assert set(got.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        assert got[key].dtype == expected[key].dtype
        assert torch.equal(got[key], expected[key]), key
    # the writer goes on where it stopped
    restored.extend(episodes([2], start=10_000))
    assert restored[7]["observation"][0].item() == 10_000


def test_flat_checkpointer_keeps_next_rows_only_where_they_differ(tmp_path):
    storage = LazyTensorStorage(30)
    storage.checkpointer = FlatStorageCheckpointer()
    data = episodes([5, 9, 7])
    storage.set(torch.arange(21), data)
    storage.dumps(tmp_path)
    next_kept = TensorDict.load_memmap(tmp_path / "next_kept")
    # one ("next", "observation") row per episode end: steps 4, 13 and 20 (5, 105 + 9, 214 + 7)
    assert next_kept.batch_size == torch.Size([3])
    assert next_kept["next", "observation"][:, 0].tolist() == [5.0, 114.0, 221.0]
    assert set(next_kept.keys(True, True)) == {("next", "observation")}  # reward, done: whole
    compact = TensorDict.load_memmap(tmp_path / "data")
    assert ("next", "observation") not in compact.keys(True, True)
    assert compact["next", "reward"].shape == (21, 1)


def test_a_dump_without_its_record_or_with_damaged_files_is_refused(tmp_path):
    storage = LazyTensorStorage(20)
    storage.checkpointer = TensorStorageCheckpointer()
    storage.set(torch.arange(10), episodes([10]))
    storage.dumps(tmp_path / "a")
    target = LazyTensorStorage(20)
    target.checkpointer = TensorStorageCheckpointer()
    target.set(torch.arange(3), episodes([3], start=500))
    before = target[:].clone()
    # a damaged record
    (tmp_path / "a" / "rl_buffers_checkpoint.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"rl_buffers_checkpoint\.json is damaged"):
        target.loads(tmp_path / "a")
    # a dump killed before its record: refused
    (tmp_path / "a" / "rl_buffers_checkpoint.json").unlink()
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
        target.loads(tmp_path / "a")
    # a truncated data file
    storage.dumps(tmp_path / "b")
    leaf = next((tmp_path / "b" / "data").rglob("observation.memmap"))
    leaf.write_bytes(leaf.read_bytes()[:10])
    with pytest.raises(
        ValueError, match=r"observation\.memmap is damaged: expected 120 bytes, got 10"
    ):
        target.loads(tmp_path / "b")
    assert len(target) == 3
    assert torch.equal(target[:]["observation"], before["observation"])


def test_h5_file_is_hdf5_with_the_dataset_options(tmp_path):
    h5py = pytest.importorskip("h5py", reason='pip install "rl-buffers[h5py]"')
    storage = LazyTensorStorage(20)
    storage.checkpointer = H5StorageCheckpointer(
        checkpoint_file="rb.h5", h5_kwargs={"compression": "gzip"}
    )
    storage.set(torch.arange(12), episodes([6, 6]))
    storage.dumps(tmp_path)
    with h5py.File(tmp_path / "rb.h5", "r") as handle:
        assert handle["data/observation"].compression == "gzip"
        assert handle["next_kept/next/observation"].shape == (2, 3)
    raw = (tmp_path / "rb.h5").read_bytes()
    (tmp_path / "rb.h5").write_bytes(raw[: len(raw) // 2])
    other = LazyTensorStorage(20)
    other.checkpointer = H5StorageCheckpointer(checkpoint_file="rb.h5")
    with pytest.raises(ValueError, match=r"rb\.h5 is damaged: expected \d+ bytes"):
        other.loads(tmp_path)
    assert len(other) == 0
    # plain tensors are saved uncompacted
    plain = LazyTensorStorage(5)
    plain.checkpointer = H5StorageCheckpointer()
    plain.set(torch.arange(3), torch.tensor([1, 2, 3], dtype=torch.int16))
    plain.dumps(tmp_path / "plain")
    back = LazyTensorStorage(5)
    back.checkpointer = H5StorageCheckpointer()
    back.loads(tmp_path / "plain")
    assert back[:].tolist() == [1, 2, 3]
    assert back[:].dtype == torch.int16


def test_memmap_storage_restored_by_a_checkpointer_reopens_from_its_scratch_dir(tmp_path):
    source = LazyTensorStorage(10)
    source.checkpointer = TensorStorageCheckpointer()
    source.set(torch.arange(6), episodes([6]))
    source.dumps(tmp_path / "ckpt")
    memmap = LazyMemmapStorage(10, scratch_dir=tmp_path / "scratch")
    memmap.checkpointer = TensorStorageCheckpointer()
    memmap.loads(tmp_path / "ckpt")
    reopened = LazyMemmapStorage.load(tmp_path / "scratch")  # its length record was written
    assert len(reopened) == 6
    assert torch.equal(reopened[:]["next", "observation"], source[:]["next", "observation"])


def test_bad_settings(tmp_path):
    with pytest.raises(TypeError, match=r"expected a StorageCheckpointerBase .* got str"):
        LazyTensorStorage(3).checkpointer = "h5"
    with pytest.raises(TypeError, match="TensorStorageCheckpointer cannot save a ListStorage"):
        ListStorage(3).checkpointer = TensorStorageCheckpointer()
    storage = LazyTensorStorage(3)
    storage.checkpointer = FlatStorageCheckpointer()
    with pytest.raises(RuntimeError, match="holds no data yet"):
        storage.dumps(tmp_path / "a")
    storage.set(torch.arange(2), torch.zeros(2))
    with pytest.raises(TypeError, match=r"got plain tensors\. Use TensorStorageCheckpointer"):
        storage.dumps(tmp_path / "b")


def test_a_checkpoint_from_another_checkpointer_or_size_is_refused(tmp_path):
    storage = LazyTensorStorage(10)
    storage.checkpointer = TensorStorageCheckpointer()
    storage.set(torch.arange(4), episodes([4]))
    storage.dumps(tmp_path)
    other = LazyTensorStorage(10)
    other.checkpointer = FlatStorageCheckpointer()
    with pytest.raises(ValueError, match="written by TensorStorageCheckpointer"):
        other.loads(tmp_path)
    small = LazyTensorStorage(5)
    small.checkpointer = TensorStorageCheckpointer()
    with pytest.raises(ValueError, match=r"max_size=10, ndim=1; this one has max_size=5"):
        small.loads(tmp_path)


def _dump_forever(folder, checkpointer_cls, running):
    # the child: dumps generation 1, 2, 1, 2, ... of a 2-entry storage into one folder
    torch.set_num_threads(1)
    storages = []
    for value in (1.0, 2.0):
        storage = LazyTensorStorage(512)
        storage.checkpointer = checkpointer_cls()
        full = torch.full((512, 512), value)
        storage.set(torch.arange(512), TensorDict({"first": full, "second": full.clone()}, [512]))
        storages.append(storage)
    storages[0].dumps(folder)
    running.set()
    generation = 1
    while True:
        storages[generation % 2].dumps(folder)
        generation += 1


@pytest.mark.parametrize(
    "checkpointer",
    [TensorStorageCheckpointer, FlatStorageCheckpointer, NestedStorageCheckpointer],
)
def test_a_dump_killed_at_any_moment_is_read_whole_or_refused(tmp_path, checkpointer):
    """A child dumping into one folder in a loop is SIGKILLed at spread moments: loads then
    gives one generation in every entry of every row, or refuses the folder; never a mix."""
    context = multiprocessing.get_context("fork")
    outcomes = {"whole": 0, "refused": 0}
    for attempt in range(6):
        running = context.Event()
        child = context.Process(
            target=_dump_forever, args=(tmp_path, checkpointer, running), daemon=True
        )
        child.start()
        try:
            assert running.wait(60), "the dumping child did not start"
            time.sleep(0.002 + 0.007 * attempt)
        finally:
            os.kill(child.pid, signal.SIGKILL)  # (only the child this test started)
            child.join(60)
        assert child.exitcode == -signal.SIGKILL
        storage = LazyTensorStorage(512)
        storage.checkpointer = checkpointer()
        try:
            storage.loads(tmp_path)
        except FileNotFoundError:
            outcomes["refused"] += 1
            continue
        first, second = storage[:]["first"], storage[:]["second"]
        generation = first[0, 0]
        assert bool((first == generation).all()), f"attempt {attempt}: a mixed first entry"
        assert bool((second == generation).all()), f"attempt {attempt}: a mixed item"
        outcomes["whole"] += 1
    assert sum(outcomes.values()) == 6


def test_nested_checkpointer_saves_one_component_per_trajectory(tmp_path):
    storage = LazyTensorStorage(30)
    storage.checkpointer = NestedStorageCheckpointer()
    storage.set(torch.arange(21), episodes([5, 9, 7]))
    storage.dumps(tmp_path)
    nested = TensorDict.load_memmap(tmp_path / "data")
    observation = nested["observation"]
    assert observation.is_nested
    assert [piece.shape for piece in observation.unbind(0)] == [(5, 3), (9, 3), (7, 3)]
    assert TensorDict.load_memmap(tmp_path / "next_kept").batch_size == torch.Size([3])


def _filled(checkpointer, start=500):
    """A storage of 3 items (a target that a refused loads must leave as it was)."""
    storage = LazyTensorStorage(20)
    storage.checkpointer = checkpointer()
    storage.set(torch.arange(3), episodes([3], start=start))
    return storage


def _assert_unchanged(storage, before, next_row):
    assert len(storage) == len(before)
    assert storage.next_row == next_row
    got = storage[:]
    for key in before.keys(True, True):
        assert got[key].dtype == before[key].dtype
        assert torch.equal(got[key], before[key]), key


@pytest.mark.parametrize("checkpointer", CHECKPOINTERS)
@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_a_truncated_or_altered_data_file_is_refused_and_nothing_restored(
    tmp_path, checkpointer, damage
):
    # FlatStorageCheckpointer and NestedStorageCheckpointer loaded a data file cut to half
    # its size (tensordict pads it with zeros), and no checkpointer noticed a changed byte
    source = LazyTensorStorage(20)
    source.checkpointer = checkpointer()
    source.set(torch.arange(20), episodes([10, 10]))
    source.dumps(tmp_path / "ckpt")
    files = sorted(
        file
        for file in (tmp_path / "ckpt").rglob("*")
        if file.suffix in (".memmap", ".h5") and not file.name.endswith(".shape.memmap")
    )
    assert files
    for file in files:
        raw = file.read_bytes()
        if damage == "truncated":
            file.write_bytes(raw[: len(raw) // 2])
        else:
            middle = len(raw) // 2
            file.write_bytes(raw[:middle] + bytes([raw[middle] ^ 0x5A]) + raw[middle + 1 :])
        target = _filled(checkpointer)
        before = target[:].clone()
        with pytest.raises(ValueError, match=rf"{file.name} is damaged: expected .*Nothing was"):
            target.loads(tmp_path / "ckpt")
        _assert_unchanged(target, before, next_row=3)
        file.write_bytes(raw)
    target = _filled(checkpointer)
    target.loads(tmp_path / "ckpt")  # intact again: loads
    assert torch.equal(target[:]["next", "observation"], source[:]["next", "observation"])


@pytest.mark.parametrize(
    "checkpointer", [TensorStorageCheckpointer, FlatStorageCheckpointer, NestedStorageCheckpointer]
)
def test_a_checkpoint_without_a_file_list_still_loads_and_a_truncated_file_is_refused(
    tmp_path, checkpointer
):
    # checkpoints written before the file list (size, CRC-32) was added to the record load
    # unchecked against it; a truncated memory-mapped file is still refused by its size
    import json

    source = LazyTensorStorage(20)
    source.checkpointer = checkpointer()
    source.set(torch.arange(12), episodes([6, 6]))
    source.dumps(tmp_path)
    record_file = tmp_path / "rl_buffers_checkpoint.json"
    record = json.loads(record_file.read_text())
    assert set(record["files"]) >= {"data/observation.memmap"}
    del record["files"]
    record_file.write_text(json.dumps(record))
    target = _filled(checkpointer)
    target.loads(tmp_path)
    assert torch.equal(target[:]["observation"], source[:]["observation"])
    leaf = tmp_path / "data" / "observation.memmap"
    leaf.write_bytes(leaf.read_bytes()[:40])
    target = _filled(checkpointer)
    before = target[:].clone()
    with pytest.raises(ValueError, match=r"observation\.memmap is truncated"):
        target.loads(tmp_path)
    _assert_unchanged(target, before, next_row=3)


def _storage(storage_cls, tmp_path, name, max_size=4):
    if storage_cls is LazyMemmapStorage:
        return LazyMemmapStorage(max_size, scratch_dir=tmp_path / name)
    return storage_cls(max_size)


@pytest.mark.parametrize("checkpointer", [None, *CHECKPOINTERS])
@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage])
def test_loads_refuses_an_entry_of_another_dtype(tmp_path, checkpointer, storage_cls):
    # a float checkpoint of 0.5, 1.5 was cast into an int64 storage: 0, 1
    source = _storage(storage_cls, tmp_path, "source")
    target = _storage(storage_cls, tmp_path, "target")
    if checkpointer is not None:
        source.checkpointer = checkpointer()
        target.checkpointer = checkpointer()
    source.set(torch.arange(2), TensorDict({"x": torch.tensor([0.5, 1.5])}, [2]))
    source.dumps(tmp_path / "ckpt")
    target.set(torch.arange(3), TensorDict({"x": torch.tensor([7, 8, 9])}, [3]))
    with pytest.raises(
        ValueError, match=r"key 'x' is torch\.float32 in the checkpoint but torch\.int64 in "
    ):
        target.loads(tmp_path / "ckpt")
    assert len(target) == 3
    assert target[:]["x"].tolist() == [7, 8, 9]
    assert target[:]["x"].dtype == torch.int64
