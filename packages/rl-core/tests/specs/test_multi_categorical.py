import numpy as np
import pytest
import torch

from rl_core.specs import MultiCategorical


def test_defaults_and_shape_rule():
    spec = MultiCategorical([3, 2, 4])
    assert spec.shape == (3,)
    assert spec.dtype is torch.int64
    assert spec.nvec.tolist() == [3, 2, 4]
    assert spec.cardinality() == 24
    assert MultiCategorical(torch.tensor([2, 2]), shape=(5, 2)).shape == (5, 2)
    assert repr(spec) == "MultiCategorical(shape=(3,), dtype=int64, nvec=[3, 2, 4])"


def test_constructor_errors():
    with pytest.raises(
        ValueError,
        match=r"^MultiCategorical: expected shape\[-1\] == len\(nvec\) == 2, got shape=\(4, 3\)\. "
        r"Use shape=\(\*batch, 2\)\.$",
    ):
        MultiCategorical([3, 2], shape=(4, 3))
    with pytest.raises(TypeError, match=r"MultiCategorical: expected nvec to be a sequence"):
        MultiCategorical(3)  # a 0-d nvec
    with pytest.raises(TypeError, match=r"MultiCategorical: expected nvec to be a sequence"):
        MultiCategorical([2.5])
    with pytest.raises(ValueError, match=r"nvec of shape \(2, 2\) does not broadcast"):
        MultiCategorical([[3, 2], [4, 5]], shape=(3, 2))
    with pytest.raises(
        ValueError, match=r"MultiCategorical: expected a non-empty nvec of ints >= 1, got \[3, 0\]"
    ):
        MultiCategorical([3, 0])
    with pytest.raises(TypeError, match=r"MultiCategorical: expected an integer dtype"):
        MultiCategorical([3], dtype=torch.float32)
    with pytest.raises(
        ValueError, match=r"MultiCategorical: nvec=\[300\] does not fit dtype torch.int8"
    ):
        MultiCategorical([300], dtype=torch.int8)
    with pytest.raises(
        ValueError,
        match=r"MultiCategorical: the mask leaves no valid action of sub-action 1 at batch index \(\)",
    ):
        MultiCategorical([2, 2], mask=torch.tensor([True, False, False, False]))
    with pytest.raises(
        ValueError, match=r"MultiCategorical: expected a mask broadcastable to shape \(4,\)"
    ):
        MultiCategorical([2, 2], mask=torch.ones(3, dtype=torch.bool))


def test_rand_covers_each_range():
    torch.manual_seed(0)
    spec = MultiCategorical([3, 2], shape=(4, 2), dtype=torch.int32)
    sample = spec.rand((100,))
    assert sample.shape == (100, 4, 2)
    assert sample.dtype is torch.int32
    assert set(sample[..., 0].unique().tolist()) == {0, 1, 2}
    assert set(sample[..., 1].unique().tolist()) == {0, 1}
    assert spec.is_in(sample[0])


def test_mask():
    torch.manual_seed(0)
    spec = MultiCategorical([3, 2], mask=torch.tensor([False, True, True, True, False]))
    sample = spec.rand((100,))
    assert set(sample[:, 0].tolist()) == {1, 2}
    assert set(sample[:, 1].tolist()) == {0}
    with pytest.raises(
        ValueError,
        match=r"^MultiCategorical.assert_is_in: value is a masked-out action: 1 at index \(1,\)\.$",
    ):
        spec.assert_is_in(torch.tensor([2, 1]))
    assert spec.project(torch.tensor([0, 1])).tolist() == [1, 0]
    spec.update_mask(None)
    assert spec.is_in(torch.tensor([0, 1]))


def test_is_in_and_project():
    spec = MultiCategorical([3, 2])
    with pytest.raises(
        ValueError,
        match=r"^MultiCategorical.assert_is_in: value is outside \[0, nvec - 1\]: 2 at index \(1,\) "
        r"\(nvec=\[3, 2\]\)\.$",
    ):
        spec.assert_is_in(torch.tensor([2, 2]))
    assert spec.project(torch.tensor([5.4, -1.0])).tolist() == [2, 0]
    assert spec.project(np.array([1, 7])).tolist() == [1, 1]


def test_index_gives_one_value_per_sub_action():
    spec = MultiCategorical([3, 2], shape=(2, 2))
    values = torch.arange(10.0).reshape(2, 5)
    out = spec.index(torch.tensor([[2, 1], [0, 0]]), values)
    assert out.tolist() == [[2.0, 4.0], [5.0, 8.0]]
    with pytest.raises(
        ValueError, match=r"MultiCategorical.index: expected an index whose last dim is 2"
    ):
        spec.index(torch.tensor([2, 1, 0]), values[0])
    with pytest.raises(
        ValueError, match=r"MultiCategorical.index: expected tensor_to_index of shape \(2, 5\)"
    ):
        spec.index(torch.tensor([[2, 1], [0, 0]]), values[:, :4])


def test_event_dim_and_shape_operations():
    spec = MultiCategorical([3, 2], shape=(4, 2), mask=torch.ones(4, 5, dtype=torch.bool))
    assert spec[0].shape == (2,)
    assert spec[0].mask.shape == (5,)
    with pytest.raises(IndexError, match=r"MultiCategorical.__getitem__: .*event dim of size 2"):
        spec[:, 0]
    assert spec.expand(3, 4, 2).mask.shape == (3, 4, 5)
    assert spec.reshape(2, 2, 2).mask.shape == (2, 2, 5)
    assert spec.unsqueeze(0).squeeze(0) == spec
    assert spec != MultiCategorical([2, 3], shape=(4, 2))
    assert spec.clone() == spec


def test_encode_to_numpy_round_trip():
    spec = MultiCategorical([3, 2])
    array = np.array([2, 1], dtype=np.int32)
    assert spec.to_numpy(spec.encode(array), safe=True).tolist() == [2, 1]
    with pytest.raises(
        ValueError, match=r"MultiCategorical.encode: expected shape \(2,\), got \(3,\)"
    ):
        spec.encode([1, 1, 1])


def test_multi_dimensional_nvec_gives_each_batch_element_its_counts():
    # TorchRL: nvec of shape (*batch, k); element [i, j] takes values in [0, nvec[i, j]).
    nvec = torch.tensor([[2, 3], [4, 5]])
    spec = MultiCategorical(nvec)
    assert spec.shape == (2, 2)
    assert spec.nvec.tolist() == [[2, 3], [4, 5]]
    samples = spec.rand((4000,))
    assert samples.shape == (4000, 2, 2)
    assert bool((samples >= 0).all())
    assert samples.amax(0).tolist() == [[1, 2], [3, 4]]  # every count reached, none exceeded
    assert spec.is_in(torch.tensor([[1, 2], [3, 4]]))
    assert not spec.is_in(torch.tensor([[2, 0], [0, 0]]))  # 2 >= nvec[0, 0]
    assert not spec.is_in(torch.tensor([[0, 0], [4, 0]]))
    with pytest.raises(ValueError, match=r"outside \[0, nvec - 1\]: 4 at index \(1, 0\)"):
        spec.assert_is_in(torch.tensor([[0, 0], [4, 0]]))
    assert spec.project(torch.tensor([[9, 9], [9, -3]])).tolist() == [[1, 2], [3, 0]]
    assert spec.project(torch.full((3, 2, 2), 7)).tolist() == [[[1, 2], [3, 4]]] * 3
    row = spec[1]
    assert row == MultiCategorical([4, 5])
    assert row.cardinality() == 20
    assert spec.expand(3, 2, 2).rand().shape == (3, 2, 2)
    assert spec.to(torch.int32).rand().dtype == torch.int32
    assert "nvec=[2, 3, 4, 5]" in repr(spec)


def test_multi_dimensional_nvec_with_equal_rows_is_the_plain_spec():
    spec = MultiCategorical(torch.tensor([[3, 2], [3, 2]]))
    assert spec == MultiCategorical([3, 2], shape=(2, 2))
    assert spec.nvec.tolist() == [3, 2]
    masked = MultiCategorical(
        torch.tensor([[3, 2], [3, 2]]), mask=torch.tensor([True, False, True, True, True])
    )
    assert bool((masked.rand((200,))[..., 0] != 1).all())


def test_multi_dimensional_nvec_refuses_what_needs_equal_rows():
    nvec = torch.tensor([[2, 3], [4, 5]])
    with pytest.raises(ValueError, match=r"a mask needs the same nvec for every batch element"):
        MultiCategorical(nvec, mask=torch.ones(2, 7, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"cardinality: needs the same nvec"):
        MultiCategorical(nvec).cardinality()
    with pytest.raises(TypeError, match=r"MultiCategorical.to: expected an integer dtype"):
        MultiCategorical(nvec).to(torch.float32)
