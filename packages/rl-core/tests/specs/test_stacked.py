import numpy as np
import pytest
import torch

from rl_core.specs import Bounded, Categorical, Composite, OneHot, Stacked, Unbounded, stack_specs


def test_different_shapes_give_lists():
    spec = stack_specs([OneHot(3), OneHot(5)])
    assert isinstance(spec, Stacked)
    assert spec.shape == (2, -1)
    assert len(spec) == 2
    assert spec.dtype is torch.bool
    values = spec.rand()
    assert isinstance(values, list)
    assert [v.shape for v in values] == [(3,), (5,)]
    assert spec.is_in(values)
    assert spec.is_in(spec.zero((4,))) is False  # zeros are not one-hot
    assert [v.shape for v in spec.zero((4,))] == [(4, 3), (4, 5)]


def test_equal_shapes_give_dense_tensors():
    spec = stack_specs([Bounded(-1.0, 1.0, shape=(3,)), Bounded(0.0, 5.0, shape=(3,))])
    assert isinstance(spec, Stacked)
    assert spec.shape == (2, 3)
    sample = spec.rand((7,))
    assert isinstance(sample, torch.Tensor)
    assert sample.shape == (7, 2, 3)
    assert spec.is_in(sample[0])
    bad = torch.stack([torch.zeros(3), torch.full((3,), 9.0)])
    with pytest.raises(
        ValueError,
        match=r"^Bounded.assert_is_in: value is outside the bounds: 9.0 at index \(0,\) is not in "
        r"\[0.0, 5.0\] \(slice 1 along stack dim 0\)\.$",
    ):
        spec.assert_is_in(bad)
    projected = spec.project(bad)
    assert projected[1].tolist() == [5.0, 5.0, 5.0]
    assert spec.is_in(projected)


def test_equal_specs_give_a_plain_spec():
    spec = stack_specs([Categorical(4, shape=(2,))] * 3, dim=1)
    assert spec == Categorical(4, shape=(2, 3))
    composite = stack_specs([Composite(a=Unbounded(shape=(2,)))] * 3)
    assert isinstance(composite, Composite)
    assert composite.shape == (3,)
    assert composite["a"].shape == (3, 2)


def test_stack_dim_one():
    spec = stack_specs(
        [Unbounded(shape=(4, 2)), Unbounded(shape=(4, 2), dtype=torch.float64)], dim=1
    )
    assert spec.shape == (4, 2, 2)
    assert spec.dtype is None
    values = spec.rand()
    assert isinstance(values, list)  # different dtypes are not stacked densely
    assert spec[:, 1].dtype is torch.float64
    with pytest.raises(
        IndexError, match=r"Stacked.__getitem__: only indexing along the stack dim 1"
    ):
        spec[0]


def test_value_errors():
    spec = stack_specs([OneHot(3), OneHot(5)])
    with pytest.raises(
        ValueError, match=r"^Stacked.assert_is_in: value is a list of 1 values, expected 2\.$"
    ):
        spec.assert_is_in([torch.zeros(3, dtype=torch.bool)])
    with pytest.raises(
        ValueError, match=r"Stacked.assert_is_in: value is a str, expected a tensor"
    ):
        spec.assert_is_in("x")
    dense = stack_specs([Unbounded(shape=(3,)), Unbounded(shape=(3,), device="cpu")])
    with pytest.raises(ValueError, match=r"value has shape \(3,\), expected 2 slices along dim 0"):
        dense.assert_is_in(torch.zeros(3))
    with pytest.raises(ValueError, match=r"Stacked.project: the value is a str"):
        spec.project("x")


def test_encode_to_numpy_round_trip():
    spec = stack_specs([Categorical(3), Categorical(5)])
    encoded = spec.encode(np.array([2, 4]))
    assert encoded.tolist() == [2, 4]
    assert spec.to_numpy(encoded, safe=True).tolist() == [2, 4]
    ragged = stack_specs([OneHot(2), OneHot(3)])
    arrays = ragged.to_numpy([torch.tensor([False, True]), torch.tensor([True, False, False])])
    assert [a.tolist() for a in arrays] == [1, 0]
    back = ragged.encode(arrays)
    assert ragged.is_in(back)
    with pytest.raises(ValueError, match=r"Stacked.encode: expected 2 slices along dim 0, got 3"):
        ragged.encode([0, 1, 2])


def test_indexing_and_shape_operations():
    spec = stack_specs([OneHot(3), OneHot(5), OneHot(2)])
    assert spec[1] == OneHot(5)
    assert spec[-1] == OneHot(2)
    assert spec[1:].specs == (OneHot(5), OneHot(2))
    with pytest.raises(
        IndexError, match=r"Stacked.__getitem__: index 3 is out of range for a stack of 3"
    ):
        spec[3]
    with pytest.raises(IndexError, match=r"Stacked.__getitem__: the slice .* selects no member"):
        spec[5:]
    with pytest.raises(IndexError, match=r"Stacked.__getitem__: expected an int or a slice along"):
        spec[torch.tensor([0, 1])]
    expanded = spec.expand(4, 3, -1)
    assert expanded.shape == (4, 3, -1)
    assert expanded.dim == 1
    assert [v.shape for v in expanded.rand()] == [(4, 3), (4, 5), (4, 2)]
    with pytest.raises(ValueError, match=r"Stacked.expand: expected \(\*new_dims, \*\(3, -1\)\)"):
        spec.expand(4, 4)
    unsqueezed = spec.unsqueeze(0)
    assert unsqueezed.shape == (1, 3, -1)
    assert unsqueezed.dim == 1
    assert unsqueezed.squeeze() == spec
    single = stack_specs([OneHot(3), OneHot(5)])[0:1]
    assert single.squeeze(0) == OneHot(3)
    with pytest.raises(ValueError, match=r"Stacked.squeeze: the stack dim 0 has size 3, not 1"):
        spec.squeeze(0)
    with pytest.raises(ValueError, match=r"Stacked.reshape: a stack of specs of different shapes"):
        spec.reshape(-1)
    assert spec.clone() == spec
    assert spec.to("cpu").device == torch.device("cpu")
    assert spec != stack_specs([OneHot(3), OneHot(5), OneHot(4)])


def test_constructor_errors():
    with pytest.raises(TypeError, match=r"Stacked: expected leaf specs \(use StackedComposite"):
        Stacked(Composite(), Unbounded())
    with pytest.raises(ValueError, match=r"Stacked: expected at least one spec to stack, got none"):
        Stacked()
    with pytest.raises(
        ValueError,
        match=r"Stacked: expected specs with the same number of dims, got shapes \(3,\), \(3, 1\)",
    ):
        Stacked(Unbounded(shape=(3,)), Unbounded(shape=(3, 1)))
    with pytest.raises(
        ValueError, match=r"Stacked: cannot stack at dim 1: the members have 0 batch dims"
    ):
        Stacked(OneHot(3), OneHot(4), dim=1)
    with pytest.raises(TypeError, match=r"stack_specs: expected a non-empty list of specs"):
        stack_specs([])
    with pytest.raises(
        TypeError, match=r"stack_specs: expected TensorSpecs, got a int at position 1"
    ):
        stack_specs([Unbounded(), 1])
    with pytest.raises(TypeError, match=r"stack_specs: cannot stack Composites with leaf specs"):
        stack_specs([Unbounded(), Composite()])


def test_repr():
    spec = stack_specs([Categorical(3), Categorical(4)])
    assert repr(spec) == (
        "Stacked(\n"
        "    Categorical(shape=(), dtype=int64, n=3),\n"
        "    Categorical(shape=(), dtype=int64, n=4),\n"
        "    shape=(2,), dim=0)"
    )
