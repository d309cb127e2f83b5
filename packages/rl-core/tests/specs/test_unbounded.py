import numpy as np
import pytest
import torch

from rl_core.specs import Bounded, Unbounded


def test_defaults_and_repr():
    spec = Unbounded()
    assert spec.shape == torch.Size([])
    assert spec.dtype is torch.float32
    assert spec.device is None
    assert spec.domain == "continuous"
    assert repr(spec) == "Unbounded(shape=(), dtype=float32)"
    assert repr(Unbounded((2,), "cpu", torch.int64)) == (
        "Unbounded(shape=(2,), dtype=int64, device=cpu)"
    )


def test_dtype_by_name_and_discrete_domain():
    spec = Unbounded(shape=3, dtype="int32")
    assert spec.shape == (3,)
    assert spec.dtype is torch.int32
    assert spec.domain == "discrete"


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.int64, torch.uint8, torch.bool]
)
def test_rand_zero_one_shapes_and_dtypes(dtype):
    spec = Unbounded(shape=(4, 2), dtype=dtype)
    for value in (spec.rand(), spec.zero(), spec.zeros(), spec.one(), spec.ones()):
        assert value.shape == (4, 2)
        assert value.dtype is dtype
        assert spec.is_in(value)
    assert spec.rand((3,)).shape == (3, 4, 2)
    assert spec.rand(5).shape == (5, 4, 2)
    assert spec.zero(torch.Size([2, 1])).shape == (2, 1, 4, 2)
    assert bool((spec.one() == 1).all())


def test_rand_batch_shape_errors():
    spec = Unbounded(shape=(2,))
    with pytest.raises(TypeError, match=r"Unbounded.rand: expected the leading shape to be"):
        spec.rand("ab")
    with pytest.raises(ValueError, match=r"Unbounded.rand: expected non-negative dimensions"):
        spec.rand((-1,))
    with pytest.raises(TypeError, match=r"Unbounded.zero: expected the leading shape to be"):
        spec.zero([1.5])


def test_is_in_and_assert_is_in_messages():
    spec = Unbounded(shape=(3,), device="cpu")
    assert spec.is_in(torch.zeros(3))
    assert not spec.is_in(np.zeros(3, dtype=np.float32))
    with pytest.raises(
        ValueError, match=r"^Unbounded.assert_is_in: value is a ndarray, expected a torch.Tensor\.$"
    ):
        spec.assert_is_in(np.zeros(3))
    with pytest.raises(ValueError, match=r"value has shape \(4,\), expected \(3,\)\.$"):
        spec.assert_is_in(torch.zeros(4))
    with pytest.raises(
        ValueError, match=r"value has dtype torch.float64, expected torch.float32\.$"
    ):
        spec.assert_is_in(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"value is on device meta, expected cpu\.$"):
        spec.assert_is_in(torch.zeros(3, device="meta"))
    # No device pinned: any device is accepted.
    assert Unbounded(shape=(3,)).is_in(torch.zeros(3, device="meta"))


def test_project_casts():
    spec = Unbounded(shape=(2,), dtype=torch.int64)
    out = spec.project(torch.tensor([1.7, -2.2]))
    assert out.dtype is torch.int64
    assert spec.is_in(out)
    assert Unbounded(shape=(2,)).project([1, 2]).dtype is torch.float32
    with pytest.raises(ValueError, match=r"Unbounded.project: expected shape \(2,\), got \(3,\)"):
        spec.project(torch.zeros(3))
    with pytest.raises(TypeError, match=r"Unbounded.project: expected a tensor or array-like"):
        spec.project(object())


def test_encode():
    spec = Unbounded(shape=(3,))
    out = spec.encode(np.arange(3, dtype=np.float64))
    assert out.dtype is torch.float32
    assert out.tolist() == [0.0, 1.0, 2.0]
    assert spec.encode([1, 2, 3]).dtype is torch.float32
    assert Unbounded().encode(0.5).item() == 0.5
    # A flipped image has negative strides, which torch.as_tensor refuses.
    assert spec.encode(np.arange(3.0)[::-1]).tolist() == [2.0, 1.0, 0.0]
    with pytest.raises(
        ValueError,
        match=r"^Unbounded.encode: expected shape \(3,\), got \(4,\)\. Reshape the value or build "
        r"the spec with shape=\(4,\)\.$",
    ):
        spec.encode(np.zeros(4))
    with pytest.raises(TypeError, match=r"Unbounded.encode: cannot convert a object to a tensor"):
        spec.encode(object())


def test_encode_ignore_device_keeps_device():
    spec = Unbounded(shape=(2,), device="cpu")
    value = torch.zeros(2, device="meta")
    assert spec.encode(value, ignore_device=True).device.type == "meta"


def test_to_numpy():
    spec = Unbounded(shape=(2,), dtype=torch.bfloat16)
    array = spec.to_numpy(torch.ones(2, dtype=torch.bfloat16))
    assert array.dtype == np.float32
    assert array.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"has dtype torch.float32, expected torch.bfloat16"):
        spec.to_numpy(torch.ones(2), safe=True)
    with pytest.raises(TypeError, match=r"Unbounded.to_numpy: expected a torch.Tensor, got list"):
        spec.to_numpy([1.0, 2.0])


def test_constructor_errors():
    with pytest.raises(TypeError, match=r"Unbounded: expected shape to be an int, a tuple of ints"):
        Unbounded(shape="3")
    with pytest.raises(
        TypeError, match=r"Unbounded: expected shape to be a sequence of ints, got an element 2.0"
    ):
        Unbounded(shape=(2.0,))
    with pytest.raises(
        ValueError, match=r"Unbounded: expected non-negative dimensions in shape, got \(-1,\)"
    ):
        Unbounded(shape=(-1,))
    with pytest.raises(TypeError, match=r"Unbounded: expected dtype to be a torch.dtype"):
        Unbounded(dtype="floaty")
    with pytest.raises(ValueError, match=r"Unbounded: expected a device such as 'cpu'"):
        Unbounded(device="nowhere")
    with pytest.raises(TypeError, match=r"Unbounded: expected device to be a torch.device"):
        Unbounded(device=1.5)


def test_eq_to_clone():
    spec = Unbounded(shape=(2,))
    assert spec == Unbounded(shape=(2,))
    assert spec != Unbounded(shape=(3,))
    assert spec != Unbounded(shape=(2,), dtype=torch.float64)
    assert spec != Unbounded(shape=(2,), device="cpu")
    assert spec != Bounded(-1, 1, shape=(2,))
    moved = spec.to("cpu")
    assert moved.device == torch.device("cpu")
    assert moved.to("cpu") is moved
    assert spec.cpu() == moved
    assert spec.clone() == spec
    assert spec.clone() is not spec


def test_shape_operations():
    spec = Unbounded(shape=(1, 3))
    assert spec.expand(4, 1, 3).shape == (4, 1, 3)
    assert spec.expand((2, 5, 3)).shape == (2, 5, 3)
    assert spec.expand(2, -1, -1).shape == (2, 1, 3)
    assert spec.squeeze().shape == (3,)
    assert spec.squeeze(0).shape == (3,)
    assert spec.squeeze(1).shape == (1, 3)  # not a singleton: unchanged, like Tensor.squeeze
    assert spec.unsqueeze(-1).shape == (1, 3, 1)
    assert spec.reshape(3).shape == (3,)
    assert spec.reshape(-1, 1).shape == (3, 1)
    assert spec.view(3, 1).shape == (3, 1)
    assert spec[0].shape == (3,)
    assert spec[..., 1:].shape == (1, 2)
    assert spec[None].shape == (1, 1, 3)
    with pytest.raises(
        ValueError, match=r"Unbounded.expand: cannot expand shape \(1, 3\) to \(4, 4\)"
    ):
        spec.expand(4, 4)
    with pytest.raises(ValueError, match=r"Unbounded.expand: the new shape \(3,\) has fewer dims"):
        spec.expand(3)
    with pytest.raises(
        ValueError,
        match=r"Unbounded.reshape: cannot reshape shape \(1, 3\) \(3 elements\) to \(2, 2\)",
    ):
        spec.reshape(2, 2)
    with pytest.raises(IndexError, match=r"Unbounded.__getitem__: index \(0, 0, 0\) does not fit"):
        spec[0, 0, 0]
    with pytest.raises(IndexError, match=r"Unbounded.squeeze: dim 2 is out of range for 2 dims"):
        spec.squeeze(2)
