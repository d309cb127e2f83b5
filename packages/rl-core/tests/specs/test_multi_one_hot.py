import numpy as np
import pytest
import torch

from rl_core.specs import MultiOneHot


def test_defaults_and_shape_rule():
    spec = MultiOneHot([3, 2])
    assert spec.shape == (5,)
    assert spec.dtype is torch.bool
    assert spec.cardinality() == 6
    assert repr(spec) == "MultiOneHot(shape=(5,), dtype=bool, nvec=[3, 2])"
    with pytest.raises(
        ValueError,
        match=r"^MultiOneHot: expected shape\[-1\] == sum\(nvec\) == 5, got shape=\(2,\)\. Use "
        r"shape=\(\*batch, 5\)\.$",
    ):
        MultiOneHot([3, 2], shape=(2,))
    with pytest.raises(TypeError, match=r"MultiOneHot: expected a bool, integer or floating dtype"):
        MultiOneHot([2], dtype=torch.complex64)
    with pytest.raises(
        ValueError, match=r"MultiOneHot: the mask leaves no valid action of sub-action 0"
    ):
        MultiOneHot([2, 1], mask=torch.tensor([False, False, True]))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.float32])
def test_rand_has_one_hot_blocks(dtype):
    torch.manual_seed(0)
    spec = MultiOneHot([3, 2], shape=(4, 5), dtype=dtype)
    sample = spec.rand((10,))
    assert sample.shape == (10, 4, 5)
    assert sample.dtype is dtype
    assert bool((sample[..., :3].sum(-1) == 1).all())
    assert bool((sample[..., 3:].sum(-1) == 1).all())
    assert spec.is_in(sample[0])


def test_is_in_messages():
    spec = MultiOneHot([3, 2], dtype=torch.int64)
    with pytest.raises(
        ValueError,
        match=r"^MultiOneHot.assert_is_in: value is not one-hot in sub-action 1: the block at batch "
        r"index \(\) has 2 ones, expected exactly 1\.$",
    ):
        spec.assert_is_in(torch.tensor([1, 0, 0, 1, 1]))
    with pytest.raises(
        ValueError, match=r"has entries other than 0 and 1, expected one-hot blocks"
    ):
        spec.assert_is_in(torch.tensor([2, 0, 0, 1, 0]))


def test_mask():
    torch.manual_seed(0)
    spec = MultiOneHot([3, 2], mask=torch.tensor([True, False, False, True, True]))
    sample = spec.rand((20,))
    assert bool(sample[:, 0].all())
    with pytest.raises(
        ValueError, match=r"MultiOneHot.assert_is_in: value selects a masked-out action"
    ):
        spec.assert_is_in(torch.tensor([False, True, False, True, False]))
    assert spec.project(torch.tensor([0.0, 5.0, 1.0, 0.0, 1.0])).tolist() == [
        True,
        False,
        False,
        False,
        True,
    ]
    spec.update_mask(None)
    assert spec.mask is None


def test_encode_to_numpy_index_round_trip():
    spec = MultiOneHot([3, 2], shape=(2, 5), dtype=torch.float32)
    value = torch.tensor([[0.0, 0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0, 1.0]])
    indices = spec.to_numpy(value, safe=True)
    assert indices.tolist() == [[2, 0], [0, 1]]
    assert torch.equal(spec.encode(indices), value)
    assert torch.equal(spec.encode(value.numpy()), value)
    with pytest.raises(
        ValueError,
        match=r"MultiOneHot.encode: expected shape \(2, 5\) \(or sub-action indices of shape \(2, 2\)\)",
    ):
        spec.encode(np.zeros((2, 3)))
    with pytest.raises(TypeError, match=r"MultiOneHot.to_numpy: expected a torch.Tensor, got list"):
        spec.to_numpy([1, 0])


def test_index():
    spec = MultiOneHot([3, 2])
    action = torch.tensor([False, True, False, False, True])
    values = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    assert spec.index(action, values).tolist() == [2.0, 5.0]
    with pytest.raises(
        ValueError, match=r"MultiOneHot.index: expected an index whose last dim is 5"
    ):
        spec.index(torch.tensor([1, 1]), values)


def test_event_dim_is_protected():
    spec = MultiOneHot([3, 2], shape=(4, 5))
    assert spec[1:].shape == (3, 5)
    with pytest.raises(IndexError, match=r"MultiOneHot.__getitem__: .*event dim of size 5"):
        spec[0, 1]
    with pytest.raises(
        ValueError, match=r"MultiOneHot.reshape: cannot reshape \(4, 5\) to \(5, 4\)"
    ):
        spec.reshape(5, 4)
    assert spec.expand(2, 4, 5).shape == (2, 4, 5)
