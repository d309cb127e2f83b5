import math

import numpy as np
import pytest
import torch

from rl_core.specs import Bounded


def test_scalar_bounds_broadcast_to_shape():
    spec = Bounded(-1.0, 1.0, shape=(4, 3))
    assert spec.shape == (4, 3)
    assert spec.low.shape == spec.high.shape == (4, 3)
    assert spec.dtype is torch.float32
    assert spec.domain == "continuous"
    assert repr(spec) == "Bounded(shape=(4, 3), dtype=float32, low=-1.0, high=1.0)"


def test_shape_inferred_from_tensor_bounds():
    spec = Bounded(torch.tensor([0.0, -1.0]), torch.tensor([1.0, 5.0]))
    assert spec.shape == (2,)
    assert repr(spec) == "Bounded(shape=(2,), dtype=float32, low=[0.0, -1.0], high=[1.0, 5.0])"
    wide = Bounded(torch.arange(10.0), 100.0)
    assert "low=Tensor(shape=(10,), min=0.0, max=9.0)" in repr(wide)


def test_bounds_do_not_alias_user_tensors():
    low = torch.zeros(2)
    spec = Bounded(low, 1.0)
    low.fill_(5.0)
    assert spec.low.tolist() == [0.0, 0.0]


def test_constructor_errors():
    with pytest.raises(
        ValueError,
        match=r"^Bounded: expected low <= high, got low=2.0 > high=1.0 at index \(1,\)\. Swap or fix the bounds\.$",
    ):
        Bounded(torch.tensor([0.0, 2.0]), 1.0)
    with pytest.raises(
        ValueError, match=r"Bounded: low of shape \(2,\) and high of shape \(3,\) do not broadcast"
    ):
        Bounded(torch.zeros(2), torch.ones(3))
    with pytest.raises(
        ValueError, match=r"Bounded: low/high of shape \(2,\) do not broadcast to shape=\(3,\)"
    ):
        Bounded(torch.zeros(2), 1.0, shape=(3,))
    with pytest.raises(ValueError, match=r"Bounded: low contains NaN"):
        Bounded(float("nan"), 1.0)
    with pytest.raises(
        ValueError, match=r"Bounded: high=0.5 is not integral, but dtype is torch.int64"
    ):
        Bounded(0, 0.5, dtype=torch.int64)
    with pytest.raises(
        ValueError, match=r"Bounded: high=300 does not fit dtype torch.uint8 \(\[0, 255\]\)"
    ):
        Bounded(0, 300, dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"Bounded: high is infinite, which an integer dtype"):
        Bounded(0, math.inf, dtype=torch.int32)
    with pytest.raises(TypeError, match=r"Bounded: dtype torch.bool is not supported. Use Binary"):
        Bounded(0, 1, dtype=torch.bool)
    with pytest.raises(
        TypeError, match=r"Bounded: expected low to be real numbers, got dtype torch.bool"
    ):
        Bounded(torch.tensor(True), 1)
    with pytest.raises(
        TypeError, match=r"Bounded: expected high to be a number, a sequence or a tensor"
    ):
        Bounded(0, "one")


def test_rand_continuous_in_bounds():
    torch.manual_seed(0)
    spec = Bounded(torch.tensor([-1.0, 0.0, 10.0]), torch.tensor([1.0, 0.0, 11.0]))
    sample = spec.rand((1000,))
    assert sample.shape == (1000, 3)
    assert spec.expand(1000, 3).is_in(sample)
    assert bool((sample[:, 1] == 0).all())  # a degenerate interval
    assert sample[:, 0].min() < -0.9
    assert sample[:, 0].max() > 0.9


def test_rand_with_infinite_bounds():
    torch.manual_seed(0)
    spec = Bounded(
        torch.tensor([0.0, -math.inf, -math.inf]), torch.tensor([math.inf, 0.0, math.inf])
    )
    sample = spec.rand((500,))
    assert bool(sample.isfinite().all())
    assert bool((sample[:, 0] >= 0).all())
    assert bool((sample[:, 1] <= 0).all())
    assert spec.is_in(sample[0])


def test_rand_discrete_inclusive():
    torch.manual_seed(0)
    spec = Bounded(1, 6, shape=(2000,), dtype=torch.int64)
    sample = spec.rand()
    assert sample.dtype is torch.int64
    assert set(sample.tolist()) == {1, 2, 3, 4, 5, 6}
    assert spec.domain == "discrete"
    varied = Bounded(torch.tensor([0, 10]), torch.tensor([1, 12]), dtype=torch.int16)
    samples = varied.rand((500,))
    assert samples.dtype is torch.int16
    assert set(samples[:, 0].tolist()) == {0, 1}
    assert set(samples[:, 1].tolist()) == {10, 11, 12}


def test_is_in_reports_the_offending_element():
    spec = Bounded(-1.0, 1.0, shape=(2,))
    assert spec.is_in(torch.tensor([-1.0, 1.0]))
    assert not spec.is_in(torch.tensor([0.0, 1.5]))
    assert not spec.is_in(torch.tensor([0.0, float("nan")]))
    with pytest.raises(
        ValueError,
        match=r"^Bounded.assert_is_in: value is outside the bounds: 1.5 at index \(1,\) is not in "
        r"\[-1.0, 1.0\]\.$",
    ):
        spec.assert_is_in(torch.tensor([0.0, 1.5]))
    with pytest.raises(ValueError, match=r"value has dtype torch.float64, expected torch.float32"):
        spec.assert_is_in(torch.zeros(2, dtype=torch.float64))


def test_project_clamps_and_rounds():
    spec = Bounded(-1.0, 1.0, shape=(4,))
    out = spec.project(torch.tensor([-3.0, 0.25, float("nan"), math.inf], dtype=torch.float64))
    assert out.dtype is torch.float32
    assert out.tolist() == [-1.0, 0.25, -1.0, 1.0]
    discrete = Bounded(0, 4, shape=(3,), dtype=torch.int64)
    assert discrete.project(torch.tensor([1.6, -2.0, 9.0])).tolist() == [2, 0, 4]
    assert discrete.project(np.array([7, 3, -1])).tolist() == [4, 3, 0]
    with pytest.raises(ValueError, match=r"Bounded.project: expected shape \(3,\), got \(2,\)"):
        discrete.project(torch.zeros(2))


def test_cardinality():
    assert Bounded(-2, 2, shape=(3,), dtype=torch.int8).cardinality() == 5
    with pytest.raises(ValueError, match=r"Bounded.cardinality: a torch.float32 box is continuous"):
        Bounded(0.0, 1.0).cardinality()
    varied = Bounded(torch.tensor([0, 0]), torch.tensor([1, 3]), dtype=torch.int64)
    with pytest.raises(ValueError, match=r"Bounded.cardinality: the bounds differ across elements"):
        varied.cardinality()
    assert varied[1].cardinality() == 4


def test_shape_operations_carry_the_bounds():
    spec = Bounded(torch.tensor([0.0, 1.0, 2.0]), 5.0)
    expanded = spec.expand(2, 3)
    assert expanded.shape == (2, 3)
    assert expanded.low.tolist() == [[0.0, 1.0, 2.0]] * 2
    assert spec[1:].low.tolist() == [1.0, 2.0]
    assert spec[torch.tensor([True, False, True])].low.tolist() == [0.0, 2.0]
    assert spec.unsqueeze(0).low.shape == (1, 3)
    assert spec.unsqueeze(0).squeeze().low.shape == (3,)
    assert spec.reshape(3, 1).low[:, 0].tolist() == [0.0, 1.0, 2.0]
    assert spec.reshape(3, 1).is_in(torch.full((3, 1), 3.0))


def test_encode_to_numpy_round_trip():
    spec = Bounded(0, 255, shape=(2, 2), dtype=torch.uint8)
    array = np.array([[0, 10], [200, 255]], dtype=np.uint8)
    encoded = spec.encode(array)
    assert encoded.dtype is torch.uint8
    assert np.array_equal(spec.to_numpy(encoded, safe=True), array)
    # encode does not check the bounds; assert_is_in does.
    out_of_range = Bounded(0.0, 1.0, shape=(1,)).encode([3.0])
    assert out_of_range.tolist() == [3.0]


def test_eq_clone_to():
    spec = Bounded(0.0, 1.0, shape=(2,))
    assert spec == Bounded(0.0, 1.0, shape=(2,))
    assert spec != Bounded(0.0, 2.0, shape=(2,))
    assert spec != Bounded(0.0, 1.0, shape=(2,), dtype=torch.float64)
    clone = spec.clone()
    clone.low.fill_(-1.0)
    assert spec.low.tolist() == [0.0, 0.0]
    assert spec.to("cpu").low.device == torch.device("cpu")
    assert spec.to("cpu").device == torch.device("cpu")


def test_zero_and_one():
    spec = Bounded(-1.0, 1.0, shape=(2,))
    assert spec.is_in(spec.zero())
    assert spec.is_in(spec.one())
    assert not Bounded(2.0, 3.0).is_in(Bounded(2.0, 3.0).zero())
