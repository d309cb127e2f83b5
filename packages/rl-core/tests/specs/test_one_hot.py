import numpy as np
import pytest
import torch

from rl_core.specs import Categorical, OneHot


def test_defaults_and_shape_rule():
    spec = OneHot(4)
    assert spec.shape == (4,)
    assert spec.dtype is torch.bool
    assert spec.cardinality() == 4
    assert OneHot(4, shape=(2, 4)).shape == (2, 4)
    with pytest.raises(
        ValueError,
        match=r"^OneHot: expected shape\[-1\] == n == 4, got shape=\(2, 3\)\. Use shape=\(\*batch, 4\)\.$",
    ):
        OneHot(4, shape=(2, 3))
    with pytest.raises(ValueError, match=r"OneHot: expected shape\[-1\] == n == 4, got shape=\(\)"):
        OneHot(4, shape=())
    with pytest.raises(TypeError, match=r"OneHot: expected a bool, integer or floating dtype"):
        OneHot(2, dtype=torch.complex64)


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.float32])
def test_rand_is_one_hot(dtype):
    torch.manual_seed(0)
    spec = OneHot(3, shape=(5, 3), dtype=dtype)
    sample = spec.rand((10,))
    assert sample.shape == (10, 5, 3)
    assert sample.dtype is dtype
    assert bool((sample.sum(-1) == 1).all())
    assert spec.is_in(sample[0])


def test_is_in_messages():
    spec = OneHot(3, shape=(2, 3), dtype=torch.int64)
    with pytest.raises(
        ValueError,
        match=r"^OneHot.assert_is_in: value is not one-hot: the vector at batch index \(1,\) has 2 "
        r"ones, expected exactly 1\.$",
    ):
        spec.assert_is_in(torch.tensor([[1, 0, 0], [1, 1, 0]]))
    with pytest.raises(
        ValueError, match=r"has entries other than 0 and 1, expected a one-hot vector"
    ):
        spec.assert_is_in(torch.tensor([[2, 0, 0], [1, 0, 0]]))
    assert not spec.is_in(torch.zeros(2, 3, dtype=torch.int64))


def test_mask():
    torch.manual_seed(0)
    spec = OneHot(3, mask=torch.tensor([False, True, True]))
    samples = torch.stack([spec.rand() for _ in range(50)])
    assert not bool(samples[:, 0].any())
    with pytest.raises(
        ValueError,
        match=r"^OneHot.assert_is_in: value selects a masked-out action at batch index \(\)\.$",
    ):
        spec.assert_is_in(torch.tensor([True, False, False]))
    spec.update_mask(torch.tensor([True, False, False]))
    assert spec.rand().tolist() == [True, False, False]
    with pytest.raises(TypeError, match=r"OneHot.update_mask: expected mask to be a bool tensor"):
        spec.update_mask(torch.tensor([1, 0, 0]))


def test_project_argmax_respects_the_mask():
    spec = OneHot(4, dtype=torch.int64)
    assert spec.project(torch.tensor([0.1, 0.9, 0.3, 0.2])).tolist() == [0, 1, 0, 0]
    assert spec.project(torch.tensor([float("nan"), 0.0, -1.0, -2.0])).tolist() == [0, 1, 0, 0]
    masked = OneHot(4, dtype=torch.int64, mask=torch.tensor([True, False, True, True]))
    assert masked.project(torch.tensor([0.1, 0.9, 0.3, 0.2])).tolist() == [0, 0, 1, 0]
    everything_low = torch.full((4,), -float("inf"))
    assert masked.is_in(masked.project(everything_low))


def test_encode_accepts_one_hot_or_indices():
    spec = OneHot(3, shape=(2, 3))
    assert spec.encode(np.array([2, 0])).tolist() == [[False, False, True], [True, False, False]]
    assert spec.encode(np.eye(3)[[1, 2]]).tolist() == [[False, True, False], [False, False, True]]
    assert OneHot(3).encode(1).tolist() == [False, True, False]
    with pytest.raises(
        ValueError,
        match=r"^OneHot.encode: expected shape \(2, 3\) \(or integer indices of shape \(2,\)\), got "
        r"\(3,\)\.",
    ):
        spec.encode(np.zeros(3))


def test_to_numpy_gives_indices_and_round_trips():
    spec = OneHot(3, shape=(2, 3))
    value = torch.tensor([[False, False, True], [True, False, False]])
    array = spec.to_numpy(value, safe=True)
    assert array.tolist() == [2, 0]
    assert torch.equal(spec.encode(array), value)
    with pytest.raises(TypeError, match=r"OneHot.to_numpy: expected a torch.Tensor, got ndarray"):
        spec.to_numpy(np.zeros((2, 3)))


def test_index():
    spec = OneHot(3, shape=(2, 3))
    action = torch.tensor([[False, True, False], [True, False, False]])
    values = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert spec.index(action, values).tolist() == [[2.0], [4.0]]
    with pytest.raises(
        ValueError, match=r"OneHot.index: expected an index whose last dim is 3, got shape \(2,\)"
    ):
        spec.index(torch.tensor([1, 0]), values)
    with pytest.raises(
        ValueError, match=r"OneHot.index: expected tensor_to_index of shape \(2, 3\)"
    ):
        spec.index(action, values[:1])


def test_event_dim_is_protected():
    spec = OneHot(3, shape=(4, 3))
    assert spec[0].shape == (3,)
    assert spec[1:3].shape == (2, 3)
    assert spec[..., 0].shape == (3,)  # Ellipsis covers batch dims only
    with pytest.raises(
        IndexError,
        match=r"OneHot.__getitem__: index .* does not fit the indexable dims \(4,\).*event dim of size 3",
    ):
        spec[:, 0]
    with pytest.raises(
        ValueError, match=r"OneHot.squeeze: dim 1 is an event dim of shape \(4, 1\)"
    ):
        OneHot(1, shape=(4, 1)).squeeze(1)
    assert OneHot(1, shape=(1, 1)).squeeze().shape == (1,)
    with pytest.raises(
        ValueError, match=r"OneHot.unsqueeze: dim -1 would insert a dim after the batch dims"
    ):
        spec.unsqueeze(-1)
    assert spec.unsqueeze(-2).shape == (4, 1, 3)
    with pytest.raises(
        ValueError,
        match=r"OneHot.reshape: cannot reshape \(4, 3\) to \(2, 6\): the event dims \(3,\) must stay last",
    ):
        spec.reshape(2, 6)
    assert spec.reshape(2, 2, 3).shape == (2, 2, 3)
    with pytest.raises(
        ValueError, match=r"OneHot.expand: cannot change the event dims \(1,\) to \(3,\)"
    ):
        OneHot(1).expand(3)
    assert spec.expand(2, 4, 3).shape == (2, 4, 3)


def test_mask_follows_shape_operations():
    mask = torch.tensor([[True, False, True], [False, True, True]])
    spec = OneHot(3, shape=(2, 3), mask=mask)
    assert spec[1].mask.tolist() == [False, True, True]
    assert spec.expand(5, 2, 3).mask.shape == (5, 2, 3)
    assert spec != OneHot(3, shape=(2, 3))
    assert spec == spec.clone()
    assert spec != Categorical(3, shape=(2,), mask=mask)
    assert "mask=" in repr(spec)
