import pytest
import torch
from tensordict import TensorDict

from rl_buffers.map import HashToInt, QueryModule, RandomProjectionHash, SipHash


def test_hash_to_int_is_dense_and_saved():
    h2i = HashToInt()
    assert h2i(torch.tensor([5, -3, 5, 9]), extend=True).tolist() == [0, 1, 0, 2]
    assert h2i(torch.tensor([9, 100])).tolist() == [2, 3]  # unknown -> len, not registered
    assert len(h2i) == 3
    other = HashToInt()
    other.load_state_dict(h2i.state_dict())
    assert other(torch.tensor([-3, 9])).tolist() == [1, 2]


def test_query_module_indexes_rows_by_their_keys():
    query = QueryModule(in_keys=["a", ("nested", "b")], index_key="idx", hash_key="h")
    td = TensorDict(
        {
            "a": torch.tensor([[1, 2], [1, 2], [0, 0]]),
            ("nested", "b"): torch.tensor([1, 1, 1]),
            "other": torch.randn(3),
        },
        batch_size=[3],
    )
    out = query(td)
    assert out is td
    assert td["idx"].tolist() == [0, 0, 1]
    assert td["h"][0] == td["h"][1] != td["h"][2]
    copy = query(td.exclude("idx", "h"), clone=True, extend=False, write_hash=False)
    assert "h" not in copy.keys()
    assert copy["idx"].tolist() == [0, 0, 1]


def test_query_module_state_includes_the_table_and_projections():
    torch.manual_seed(0)
    query = QueryModule(["x"], hash_module=RandomProjectionHash(n_components=4))
    td = TensorDict(x=torch.randn(4, 32), batch_size=[4])
    first = query(td)["_index"].clone()
    fresh = QueryModule(["x"], hash_module=RandomProjectionHash(n_components=4))
    fresh.load_state_dict(query.state_dict())
    assert torch.equal(fresh(td.clone(), extend=False)["_index"], first)


def test_query_module_refuses_bad_arguments():
    with pytest.raises(ValueError, match="expected at least one key in in_keys"):
        QueryModule([])
    with pytest.raises(ValueError, match="expected one hash module per in_key \\(2\\), got 1"):
        QueryModule(["a", "b"], hash_module=[SipHash()])
    with pytest.raises(KeyError, match="expected the entry 'missing'"):
        QueryModule(["missing"])(TensorDict(a=torch.zeros(2), batch_size=[2]))
