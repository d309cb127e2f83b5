import pytest
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict

from rl_core.specs import Composite, NonTensor, Unbounded


def test_rand_and_zero_hold_the_example():
    spec = NonTensor(shape=(2,), example_data="hi")
    value = spec.rand()
    assert isinstance(value, NonTensorData)
    assert value.batch_size == (2,)
    assert value.tolist() == ["hi", "hi"]
    assert spec.zero((3,)).batch_size == (3, 2)
    assert spec.one().data == "hi"
    assert spec.dtype is None
    assert spec.is_in(value)
    assert repr(spec) == "NonTensor(shape=(2,), example_data='hi')"


def test_is_in_checks_structure_only():
    spec = NonTensor(shape=(2,))
    assert spec.is_in(NonTensorStack(NonTensorData("a"), NonTensorData(3)))
    with pytest.raises(
        ValueError,
        match=r"^NonTensor.assert_is_in: value is a str, expected NonTensorData or NonTensorStack\.$",
    ):
        spec.assert_is_in("a")
    with pytest.raises(
        ValueError, match=r"NonTensor.assert_is_in: value has batch size \(\), expected \(2,\)"
    ):
        spec.assert_is_in(NonTensorData("a"))
    pinned = NonTensor(device="cpu")
    with pytest.raises(ValueError, match=r"value is on device meta, expected cpu"):
        pinned.assert_is_in(NonTensorData("a", device="meta"))


def test_encode_project_to_numpy():
    spec = NonTensor()
    encoded = spec.encode({"text": "hello"})
    assert encoded.data == {"text": "hello"}
    assert spec.to_numpy(encoded, safe=True) == {"text": "hello"}
    assert spec.project("x").data == "x"
    same = NonTensorData("y")
    assert spec.project(same) is same
    assert spec.encode(same) is same
    stack = NonTensorStack(NonTensorData("a"), NonTensorData("b"))
    assert NonTensor(shape=(2,)).to_numpy(stack) == ["a", "b"]
    with pytest.raises(ValueError, match=r"NonTensor.encode: expected batch size \(\), got \(2,\)"):
        spec.encode(stack)
    assert spec.project(stack) is stack  # leading batch dims are allowed
    assert spec.is_in(stack)
    with pytest.raises(
        ValueError, match=r"NonTensor.project: expected batch size \(3,\).*got \(2,\)"
    ):
        NonTensor(shape=(3,)).project(stack)
    with pytest.raises(
        TypeError, match=r"NonTensor.to_numpy: expected NonTensorData or NonTensorStack, got str"
    ):
        spec.to_numpy("x")
    with pytest.raises(
        TypeError, match=r"NonTensor: non-tensor data has no dtype; expected dtype=None"
    ):
        NonTensor(dtype=torch.float32)


def test_shape_operations_and_eq():
    spec = NonTensor(shape=(2, 3), example_data=1)
    assert spec[0].shape == (3,)
    assert spec.expand(4, 2, 3).shape == (4, 2, 3)
    assert spec.reshape(6).shape == (6,)
    assert spec.unsqueeze(0).squeeze(0) == spec
    assert spec == NonTensor(shape=(2, 3), example_data=2)  # the payload is not compared
    assert spec != NonTensor(shape=(2,))


def test_inside_a_composite():
    spec = Composite(
        text=NonTensor(shape=(2,), example_data="t"), x=Unbounded(shape=(2,)), shape=(2,)
    )
    td = spec.rand()
    assert td["text"] == "t"
    assert spec.is_in(td)
    assert spec.to_numpy(td)["text"] == "t"
    td_bad = TensorDict({"text": torch.zeros(2), "x": torch.zeros(2)}, [2])
    with pytest.raises(
        ValueError, match=r"NonTensor.assert_is_in: value at key 'text' is a Tensor"
    ):
        spec.assert_is_in(td_bad)
    assert spec.encode({"text": "u", "x": [1.0, 2.0]}).get("text").tolist() == ["u", "u"]
