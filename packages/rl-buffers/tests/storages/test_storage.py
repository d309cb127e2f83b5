import pytest
import torch

from rl_buffers import ListStorage, Storage


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
