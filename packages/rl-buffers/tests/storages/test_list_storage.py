import pytest
import torch

from rl_buffers import ListStorage
from rl_buffers.storages.list_storage import stack_items


def test_set_get_and_overwrite():
    storage = ListStorage(3)
    storage.set(0, "x")
    storage.set(slice(1, 3), ["y", "z"])
    assert len(storage) == 3
    storage.set(torch.tensor([0]), ["w"])
    assert storage.get(torch.tensor([0, 2])) == ["w", "z"]
    assert storage[1] == "y"
    storage.empty()
    assert len(storage) == 0


def test_bad_writes():
    storage = ListStorage(2)
    with pytest.raises(IndexError, match=r"index 2 is outside \[0, 2\)"):
        storage.set(2, "a")
    with pytest.raises(IndexError, match="leaves a gap"):
        storage.set(1, "a")
    with pytest.raises(ValueError, match="expected 2 items for 2 indices, got 1"):
        storage.set(torch.arange(2), ["a"])


def test_stack_items():
    assert stack_items([torch.zeros(2), torch.ones(2)]).shape == (2, 2)
    assert stack_items(["a", 1]) == ["a", 1]
