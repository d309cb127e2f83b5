import numpy as np
import pytest
import torch

from rl_core.specs import Binary


def test_construction():
    assert Binary(3).shape == (3,)
    assert Binary(shape=(2, 4)).n == 4
    assert Binary(4, shape=(2, 4)).dtype is torch.int8
    assert Binary(2).cardinality() == 4
    assert repr(Binary(2, dtype=torch.bool)) == "Binary(shape=(2,), dtype=bool, n=2)"
    with pytest.raises(
        ValueError, match=r"^Binary: expected n or shape, got neither\. Pass e\.g\. Binary\(4\)\.$"
    ):
        Binary()
    with pytest.raises(
        ValueError, match=r"Binary: expected shape\[-1\] == n == 3, got shape=\(2, 4\)"
    ):
        Binary(3, shape=(2, 4))
    with pytest.raises(
        ValueError, match=r"Binary: expected a shape with at least one dim, got \(\)"
    ):
        Binary(shape=())
    with pytest.raises(ValueError, match=r"Binary: expected n >= 1, got 0"):
        Binary(0)
    with pytest.raises(TypeError, match=r"Binary: expected a bool, integer or floating dtype"):
        Binary(2, dtype=torch.complex64)


@pytest.mark.parametrize("dtype", [torch.int8, torch.bool, torch.float32])
def test_rand_zero_one_in_space(dtype):
    torch.manual_seed(0)
    spec = Binary(3, shape=(2, 3), dtype=dtype)
    sample = spec.rand((50,))
    assert sample.shape == (50, 2, 3)
    assert sample.dtype is dtype
    assert set(sample.to(torch.int64).unique().tolist()) == {0, 1}
    for value in (sample[0], spec.zero(), spec.one()):
        assert spec.is_in(value)


def test_is_in_message():
    spec = Binary(3)
    with pytest.raises(
        ValueError,
        match=r"^Binary.assert_is_in: value has an entry other than 0 and 1: 2 at index \(2,\)\.$",
    ):
        spec.assert_is_in(torch.tensor([0, 1, 2], dtype=torch.int8))


def test_project_thresholds_at_one_half():
    spec = Binary(4)
    assert spec.project(torch.tensor([0.5, 0.51, -3.0, float("nan")])).tolist() == [0, 1, 0, 0]
    assert spec.project(torch.tensor([True, False, True, False])).tolist() == [1, 0, 1, 0]
    assert spec.project(np.array([0, 1, 2, 1])).tolist() == [0, 1, 1, 1]
    assert Binary(2, dtype=torch.bool).project(torch.tensor([0.9, 0.1])).tolist() == [True, False]


def test_encode_to_numpy_and_every_dim_is_independent():
    spec = Binary(3, shape=(2, 3))
    array = np.array([[0, 1, 1], [1, 0, 0]], dtype=np.int8)
    assert np.array_equal(spec.to_numpy(spec.encode(array), safe=True), array)
    assert spec[0].shape == (3,)
    # TorchRL 0.14: each entry is its own coin, so any dim is indexed or unsqueezed and n
    # follows the last dim (Binary(n=1, shape=(1,)).unsqueeze(-1) has shape [1, 1]).
    column = spec[:, 1]
    assert (column.shape, column.n) == ((2,), 2)
    assert (Binary(1).unsqueeze(-1).shape, Binary(1).unsqueeze(-1).n) == ((1, 1), 1)
    expanded = spec.unsqueeze(-1)
    assert (expanded.shape, expanded.n, expanded.cardinality()) == ((2, 3, 1), 1, 2)
    assert expanded.is_in(torch.ones(2, 3, 1, dtype=torch.int8))
    assert spec == Binary(3, shape=(2, 3))
    assert spec != Binary(3, shape=(2, 3), dtype=torch.bool)
