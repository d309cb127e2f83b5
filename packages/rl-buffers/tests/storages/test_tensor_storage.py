import pytest
import torch
from tensordict import TensorDict

from rl_buffers import TensorStorage


def make(n=6):
    return TensorDict(
        {
            "obs": torch.arange(n * 2.0).view(n, 2),
            "next": {"done": torch.zeros(n, 1, dtype=torch.bool)},
        },
        [n],
    )


def test_existing_data_is_full_and_fast_read_matches_indexing():
    data = make()
    storage = TensorStorage(data)
    assert len(storage) == 6
    assert storage.max_size == 6
    index = torch.tensor([5, 0, 5, 3])
    # The leaf-plan read is an optimisation of TensorDict indexing: same result.
    assert (storage.get(index) == data[index]).all()
    assert storage.get(index).batch_size == torch.Size([4])
    assert (storage.get(torch.tensor([[1, 2]]))["obs"] == data["obs"][[1, 2]].unsqueeze(0)).all()
    assert storage.get(2)["obs"].tolist() == [4.0, 5.0]


def test_plain_tensor_storage():
    storage = TensorStorage(torch.arange(10.0))
    storage.set(slice(0, 2), torch.tensor([7.0, 8.0]))
    assert storage.get(torch.tensor([1, 9])).tolist() == [8.0, 9.0]
    with pytest.raises(KeyError, match="holds plain tensors"):
        storage.column("obs")


def test_column_and_missing_key():
    storage = TensorStorage(make())
    assert storage.column("obs").shape == (6, 2)
    with pytest.raises(
        KeyError, match=r"no entry 'reward'; entries: \['obs', \('next', 'done'\)\]"
    ):
        storage.column("reward")


def test_bad_construction():
    with pytest.raises(
        TypeError, match="expected storage to be a tensor or a TensorDict, got list"
    ):
        TensorStorage([1, 2])
    with pytest.raises(ValueError, match="max_size=3 but the storage holds 6 items"):
        TensorStorage(make(), 3)
    with pytest.raises(ValueError, match="expected ndim to be an int >= 1, got 0"):
        TensorStorage(make(), ndim=0)
    with pytest.raises(ValueError, match="at least 2 batch dims"):
        TensorStorage(make(), ndim=2)


def test_state_dict_round_trip():
    storage = TensorStorage(make())
    other = TensorStorage(make().zero_())
    other.load_state_dict(storage.state_dict())
    assert (other.get(torch.arange(6)) == make()).all()


def test_read_with_extra_entries_matches_the_tensordict_constructor():
    # The batch is built without the constructor's checks: it must equal what the
    # constructor builds from the same entries (keys, values, batch size, device).
    data = make()
    storage = TensorStorage(data)
    index = torch.tensor([4, 1, 1])
    extra = {"index": index, "priority_weight": torch.rand(3)}
    got = storage.get(index, extra=extra)
    expected = TensorDict({**data[index].to_dict(), **extra}, batch_size=[3])
    assert type(got) is TensorDict
    assert got.batch_size == expected.batch_size
    assert got.device == expected.device
    assert set(got.keys(True, True)) == set(expected.keys(True, True))
    assert (got == expected).all()


def test_read_with_bad_extra_entries():
    storage = TensorStorage(make())
    index = torch.tensor([0, 1])
    with pytest.raises(ValueError, match=r"expected each extra entry to be a tensor of shape \[2"):
        storage.get(index, extra={"w": torch.ones(3)})
    with pytest.raises(ValueError, match=r"under a string key, got \('a', 'b'\)"):
        storage.get(index, extra={("a", "b"): torch.ones(2)})
    with pytest.raises(ValueError, match="extra entries need TensorDict items"):
        TensorStorage(torch.zeros(4)).get(index, extra={"w": torch.ones(2)})


@pytest.mark.parametrize("extra", [False, True])
def test_one_op_read_matches_the_read_per_leaf(extra):
    # With a kernel package loaded, a CPU storage reads all leaves with one gather_rows
    # call; the oracle is the read per leaf (index_select each): the same batch.
    gen = torch.Generator().manual_seed(1)
    data = TensorDict(
        {
            "a": torch.randn(50, 3, generator=gen),
            "nested": {
                "b": torch.randint(0, 5, (50, 2, 2), generator=gen),
                "deeper": {"c": torch.rand(50, generator=gen, dtype=torch.float64)},
            },
            "flag": torch.rand(50, 1, generator=gen) < 0.5,
            "view": torch.randn(50, 4, generator=gen)[:, ::2],
        },
        [50],
    )
    storage = TensorStorage(data)
    tree = storage._tree
    index = torch.randint(0, 50, (20,), generator=gen)
    entries = {"index": index, "w": torch.rand(20)} if extra else None
    tree.gather_in_one_op = True
    fast = storage.get(index, extra=entries)
    tree.gather_in_one_op = False
    slow = storage.get(index, extra=entries)
    assert type(fast) is type(slow)
    assert fast.batch_size == slow.batch_size
    assert list(fast.keys(True, True)) == list(slow.keys(True, True))
    for key, value in slow.items(True, True):
        assert fast[key].dtype == value.dtype
        assert fast[key].is_contiguous() == value.is_contiguous()
        assert torch.equal(fast[key], value)
