import numpy as np
import pytest
import torch

from rl_core.specs import Categorical, OneHot


def test_defaults():
    spec = Categorical(5)
    assert spec.shape == ()
    assert spec.dtype is torch.int64
    assert spec.n == 5
    assert spec.mask is None
    assert spec.cardinality() == 5
    assert repr(spec) == "Categorical(shape=(), dtype=int64, n=5)"


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"^Categorical: expected n >= 1, got 0\.$"):
        Categorical(0)
    with pytest.raises(TypeError, match=r"Categorical: expected n to be an int, got 2.5"):
        Categorical(2.5)
    with pytest.raises(
        TypeError, match=r"Categorical: expected an integer dtype .* got torch.float32"
    ):
        Categorical(3, dtype=torch.float32)
    with pytest.raises(
        ValueError, match=r"Categorical: n=300 does not fit dtype torch.int8 \(max 127\)"
    ):
        Categorical(300, dtype=torch.int8)
    with pytest.raises(
        TypeError, match=r"Categorical: expected mask to be a bool tensor .* got torch.int64"
    ):
        Categorical(3, mask=torch.ones(3, dtype=torch.int64))
    with pytest.raises(
        ValueError,
        match=r"Categorical: expected a mask broadcastable to shape \(2, 3\), got \(4,\)",
    ):
        Categorical(3, shape=(2,), mask=torch.ones(4, dtype=torch.bool))
    with pytest.raises(
        ValueError, match=r"Categorical: the mask leaves no valid action at batch index \(1,\)"
    ):
        Categorical(2, shape=(2,), mask=torch.tensor([[True, False], [False, False]]))
    assert Categorical(np.int64(3)).n == 3


def test_rand_in_range():
    torch.manual_seed(0)
    spec = Categorical(4, shape=(3,), dtype=torch.int32)
    sample = spec.rand((200,))
    assert sample.shape == (200, 3)
    assert sample.dtype is torch.int32
    assert set(sample.unique().tolist()) == {0, 1, 2, 3}
    assert spec.is_in(sample[0])


def test_mask_restricts_rand_and_is_in():
    torch.manual_seed(0)
    mask = torch.tensor([[True, False, True], [False, True, False]])
    spec = Categorical(3, shape=(2,), mask=mask)
    sample = spec.rand((300,))
    assert set(sample[:, 0].tolist()) == {0, 2}
    assert set(sample[:, 1].tolist()) == {1}
    assert spec.is_in(torch.tensor([2, 1]))
    with pytest.raises(
        ValueError,
        match=r"^Categorical.assert_is_in: value is a masked-out action: 0 at index \(1,\)\.$",
    ):
        spec.assert_is_in(torch.tensor([2, 0]))
    spec.update_mask(None)
    assert spec.is_in(torch.tensor([2, 0]))
    spec.update_mask(torch.tensor([False, False, True]))  # broadcast over the batch
    assert spec.rand().tolist() == [2, 2]
    with pytest.raises(
        ValueError, match=r"Categorical.update_mask: the mask leaves no valid action"
    ):
        spec.update_mask(torch.zeros(3, dtype=torch.bool))


def test_is_in_range_message():
    spec = Categorical(3, shape=(2,))
    with pytest.raises(
        ValueError,
        match=r"^Categorical.assert_is_in: value is outside \[0, 2\]: 3 at index \(1,\)\.$",
    ):
        spec.assert_is_in(torch.tensor([0, 3]))
    assert not spec.is_in(torch.tensor([-1, 0]))
    assert not spec.is_in(torch.tensor([0, 1], dtype=torch.int32))


def test_project():
    spec = Categorical(4, shape=(4,))
    assert spec.project(torch.tensor([-2.0, 1.4, 2.6, 9.0])).tolist() == [0, 1, 3, 3]
    assert spec.project(torch.tensor([-2, 1, 7, 3], dtype=torch.int8)).dtype is torch.int64
    masked = Categorical(5, shape=(3,), mask=torch.tensor([True, False, False, True, False]))
    # Invalid actions go to the closest valid one, the lower on ties.
    assert masked.project(torch.tensor([1, 2, 4])).tolist() == [0, 3, 3]
    assert masked.is_in(masked.project(torch.tensor([1, 2, 4])))
    with pytest.raises(ValueError, match=r"Categorical.project: expected shape \(3,\), got \(2,\)"):
        masked.project(torch.zeros(2))


def test_index_picks_the_chosen_value():
    spec = Categorical(3, shape=(2,))
    values = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out = spec.index(torch.tensor([2, 0]), values)
    assert out.shape == (2, 1)
    assert out.tolist() == [[3.0], [4.0]]
    # The batch dims of the index need not be the spec's own.
    batched = spec.index(torch.zeros(5, 2, dtype=torch.int64), torch.ones(5, 2, 3))
    assert batched.shape == (5, 2, 1)
    with pytest.raises(
        ValueError, match=r"Categorical.index: expected tensor_to_index of shape \(2, 3\)"
    ):
        spec.index(torch.tensor([2, 0]), torch.ones(2, 4))
    with pytest.raises(
        TypeError, match=r"Categorical.index: expected index to be a torch.Tensor, got list"
    ):
        spec.index([2, 0], values)


def test_shape_operations_carry_the_mask():
    mask = torch.tensor([[True, False, True], [False, True, True]])
    spec = Categorical(3, shape=(2,), mask=mask)
    assert spec[1].mask.tolist() == [False, True, True]
    assert spec[1].shape == ()
    expanded = spec.expand(4, 2)
    assert expanded.mask.shape == (4, 2, 3)
    assert expanded.rand().shape == (4, 2)
    assert spec.unsqueeze(0).mask.shape == (1, 2, 3)
    assert spec.reshape(2, 1).mask.shape == (2, 1, 3)
    assert spec.unsqueeze(0).squeeze(0) == spec


def test_eq_encode_to_numpy():
    spec = Categorical(3, shape=(2,))
    assert spec == Categorical(3, shape=(2,))
    assert spec != Categorical(4, shape=(2,))
    assert spec != OneHot(3)
    assert spec != Categorical(3, shape=(2,), mask=torch.ones(3, dtype=torch.bool))
    encoded = spec.encode(np.array([2, 1], dtype=np.int32))
    assert encoded.dtype is torch.int64
    assert spec.to_numpy(encoded).tolist() == [2, 1]
    assert Categorical(3).encode(2).shape == ()
    clone = Categorical(3, mask=torch.ones(3, dtype=torch.bool)).clone()
    assert clone.mask.tolist() == [True, True, True]
