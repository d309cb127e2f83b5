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
