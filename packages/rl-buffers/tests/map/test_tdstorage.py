import pytest
import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, ListStorage
from rl_buffers.map import QueryModule, RandomProjectionHash, TensorDictMap


def keys(*rows):
    return TensorDict(obs=torch.tensor(rows, dtype=torch.float32), batch_size=[len(rows)])


def test_set_get_contains():
    tdmap = TensorDictMap(query_module=QueryModule(["obs"]), storage=LazyTensorStorage(10))
    tdmap[keys([0, 1], [2, 3])] = TensorDict(v=torch.tensor([1.0, 2.0]), batch_size=[2])
    tdmap[keys([2, 3])] = TensorDict(v=torch.tensor([5.0]), batch_size=[1])  # overwrite
    assert len(tdmap) == 2
    assert tdmap[keys([2, 3], [0, 1])]["v"].tolist() == [5.0, 1.0]
    assert tdmap.contains(keys([0, 1], [9, 9])).tolist() == [True, False]
    assert keys([0, 1]) in tdmap
    assert keys([9, 9]) not in tdmap
    assert tdmap[keys([0, 1])[0]]["v"].item() == 1.0  # an unbatched row
    with pytest.raises(KeyError, match="rows \\[1\\] of the query have no entry"):
        tdmap[keys([0, 1], [7, 7])]


def test_repeated_keys_and_write_fn_accumulate():
    def add_visits(new, old=None):
        return new if old is None else new.set("n", new["n"] + old["n"])

    tdmap = TensorDictMap(
        query_module=QueryModule(["obs"]), storage=LazyTensorStorage(10), write_fn=add_visits
    )
    tdmap[keys([1, 1], [1, 1], [2, 2])] = TensorDict(n=torch.tensor([1, 1, 1]), batch_size=[3])
    tdmap[keys([1, 1])] = TensorDict(n=torch.tensor([4]), batch_size=[1])
    assert tdmap[keys([1, 1], [2, 2])]["n"].tolist() == [6, 1]


def test_full_map_and_bad_storage_are_refused():
    tdmap = TensorDictMap(query_module=QueryModule(["obs"]), storage=LazyTensorStorage(2))
    with pytest.raises(RuntimeError, match="the map is full \\(2 keys"):
        tdmap[keys([0, 0], [1, 1], [2, 2])] = TensorDict(v=torch.zeros(3), batch_size=[3])
    with pytest.raises(TypeError, match="expected storage to be an rl_buffers Storage"):
        TensorDictMap(query_module=QueryModule(["obs"]), storage={})


def test_from_tensordict_pair_picks_hashes_and_saves(tmp_path):
    torch.manual_seed(0)
    source = TensorDict(obs=torch.randn(6, 40), act=torch.arange(6), batch_size=[6])
    dest = TensorDict(r=torch.randn(6), big=torch.randn(6, 3), batch_size=[6])
    tdmap = TensorDictMap.from_tensordict_pair(
        source, dest, in_keys=["obs", "act"], out_keys=["r"], max_size=20
    )
    assert isinstance(tdmap.query_module.hash_module["obs"], RandomProjectionHash)
    tdmap[source] = dest
    assert tdmap.out_keys == ["r"]
    assert set(tdmap[source].keys()) == {"r"}
    assert torch.equal(tdmap[source]["r"], dest["r"])
    torch.save(tdmap.state_dict(), tmp_path / "map.pt")
    fresh = TensorDictMap.from_tensordict_pair(
        source, dest, in_keys=["obs", "act"], out_keys=["r"], max_size=20
    )
    fresh.load_state_dict(torch.load(tmp_path / "map.pt", weights_only=False))
    assert torch.equal(fresh[source]["r"], dest["r"])
    with pytest.raises(ValueError, match="consolidated=True is not supported"):
        TensorDictMap.from_tensordict_pair(source, dest, in_keys=["act"], consolidated=True)


def test_list_storage_stacks():
    tdmap = TensorDictMap(query_module=QueryModule(["obs"]), storage=ListStorage(5))
    tdmap[keys([0, 0], [1, 1])] = TensorDict(v=torch.tensor([3.0, 4.0]), batch_size=[2])
    assert tdmap[keys([1, 1], [0, 0])]["v"].tolist() == [4.0, 3.0]
