import pytest
import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, ListStorage, Storage


def test_max_size_must_be_positive():
    with pytest.raises(
        ValueError, match=r"ListStorage: expected max_size to be a positive int, got 0"
    ):
        ListStorage(0)
    with pytest.raises(ValueError, match="positive int, got True"):
        ListStorage(True)


def test_base_ravel_is_flat():
    storage = ListStorage(3)
    assert isinstance(storage, Storage)
    assert storage.ravel([[0, 1], [2, 0]]).tolist() == [0, 1, 2, 0]
    assert storage.unravel(torch.tensor([1])).tolist() == [1]


def test_dumps_loads_round_trip(tmp_path):
    storage = ListStorage(5)
    storage.set(torch.arange(3), ["a", 1, {"b": 2}])
    storage.dumps(tmp_path)
    other = ListStorage(5)
    other.loads(tmp_path)
    assert other.get(torch.arange(3)) == ["a", 1, {"b": 2}]
    with pytest.raises(FileNotFoundError, match="no saved storage at"):
        other.loads(tmp_path / "missing")


def _storages():
    from tensordict import TensorDict

    from rl_buffers import LazyMemmapStorage, LazyTensorStorage

    values = torch.arange(10.0, 16.0)  # six items, room for ten
    lazy = LazyTensorStorage(10)
    lazy.set(torch.arange(6), TensorDict({"v": values}, [6]))
    memmap = LazyMemmapStorage(10)
    memmap.set(torch.arange(6), TensorDict({"v": values}, [6]))
    plain = LazyTensorStorage(10)
    plain.set(torch.arange(6), values)
    listed = ListStorage(10)
    listed.set(torch.arange(6), [float(v) for v in values])
    return {"lazy": lazy, "memmap": memmap, "tensor": plain, "list": listed}


def _values(read):
    if isinstance(read, list):
        return read
    if isinstance(read, torch.Tensor):
        return read.tolist()
    return read["v"].tolist()


@pytest.mark.parametrize("kind", ["lazy", "memmap", "tensor", "list"])
def test_storage_indexing_as_a_sequence_of_the_stored_items(kind):
    # rl.storage[0:5] used to fail ("'slice' object has no attribute 'dim'"); positions
    # index the stored items only, as Python sequences are indexed
    storage = _storages()[kind]
    expected = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]
    assert _values(storage[0:5]) == expected[0:5]
    assert _values(storage[:]) == expected  # six stored of ten slots: six
    assert _values(storage[4:100]) == expected[4:100]
    assert _values(storage[::-2]) == expected[::-2]
    assert _values(storage[-2:]) == expected[-2:]
    assert _values(storage[[5, 0, -1]]) == [15.0, 10.0, 15.0]
    assert _values(storage[torch.tensor([1, 3])]) == [11.0, 13.0]
    mask = torch.tensor([True, False, True, False, False, True])
    assert _values(storage[mask]) == [10.0, 12.0, 15.0]
    one = storage[-1]
    assert (
        one if kind == "list" else float(one["v"] if kind in ("lazy", "memmap") else one)
    ) == 15.0
    for bad in (6, -7, [0, 6], torch.tensor([-7])):
        with pytest.raises(IndexError, match="out of range for 6 items"):
            storage[bad]
    with pytest.raises(IndexError, match=r"a boolean mask needs shape \(6,\)"):
        storage[torch.tensor([True, False])]
    with pytest.raises(TypeError, match=r"expected integer positions, got torch\.float32"):
        storage[torch.tensor([1.0])]


def _flip_middle_byte(file):
    raw = bytearray(file.read_bytes())
    raw[len(raw) // 2] ^= 0x5A
    file.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_default_dumps_lists_storage_pt_and_a_damaged_copy_is_refused(tmp_path, damage):
    # storage.pt with a byte changed in the middle was read by torch.load as it was
    storage = LazyTensorStorage(6)
    storage.set(torch.arange(4), TensorDict({"x": torch.arange(4.0)}, [4]))
    storage.dumps(tmp_path)
    file = tmp_path / "storage.pt"
    if damage == "flipped":
        _flip_middle_byte(file)
    else:
        file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    target = LazyTensorStorage(6)
    target.set(torch.arange(2), TensorDict({"x": torch.tensor([7.0, 8.0])}, [2]))
    with pytest.raises(ValueError, match=r"LazyTensorStorage\.loads: .*storage\.pt is damaged"):
        target.loads(tmp_path)
    assert target[:]["x"].tolist() == [7.0, 8.0]
    assert target.next_row == 2


def test_a_default_dump_without_a_file_list_still_loads(tmp_path):
    # dumps of the previous version wrote storage.pt alone
    storage = ListStorage(5)
    storage.set(torch.arange(3), ["a", 1, {"b": 2}])
    storage.dumps(tmp_path)
    (tmp_path / "rl_buffers_files.json").unlink()
    other = ListStorage(5)
    other.loads(tmp_path)
    assert other.get(torch.arange(3)) == ["a", 1, {"b": 2}]


@pytest.mark.parametrize("lazy", [True, False])
def test_a_dump_of_another_size_is_refused_and_nothing_restored(tmp_path, lazy):
    # LazyTensorStorage(10) took a 20-item dump: len 20 with max_size 10, and the next
    # extend wrote past it
    source = LazyTensorStorage(20)
    source.set(torch.arange(20), torch.arange(20.0))
    source.dumps(tmp_path)
    target = LazyTensorStorage(10)
    if not lazy:
        target.set(torch.arange(2), torch.tensor([7.0, 8.0]))
    with pytest.raises(
        ValueError, match=r"max_size=20 \(20 rows\), this one has max_size=10 \(10 rows\)"
    ):
        target.loads(tmp_path)
    assert len(target) == (0 if lazy else 2)
    assert target.max_size == 10
    if not lazy:
        assert target[:].tolist() == [7.0, 8.0]
    with pytest.raises(ValueError, match=r"load_state_dict: the checkpoint holds .*max_size=20"):
        target.load_state_dict(source.state_dict())


def test_loads_into_a_storage_of_another_dtype_is_refused_for_plain_tensors(tmp_path):
    source = LazyTensorStorage(4)
    source.set(torch.arange(2), torch.tensor([0.5, 1.5]))
    source.dumps(tmp_path)
    target = LazyTensorStorage(4)
    target.set(torch.arange(3), torch.tensor([7, 8, 9]))
    with pytest.raises(
        ValueError, match=r"the items are torch\.float32 in the checkpoint but torch\.int64"
    ):
        target.loads(tmp_path)
    assert target[:].tolist() == [7, 8, 9]
