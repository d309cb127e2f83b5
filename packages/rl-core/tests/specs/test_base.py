import numpy as np
import pytest
import torch

from rl_core.specs import Bounded, Categorical, Composite, OneHot, TensorSpec, Unbounded
from rl_core.specs._base import _as_size, _expand_to, _norm_dim, _reshape_to


def test_tensor_spec_is_abstract():
    with pytest.raises(TypeError):
        TensorSpec()  # type: ignore[abstract]


@pytest.mark.parametrize(
    "spec",
    [
        Unbounded(shape=(4, 3)),
        Bounded(-1.0, 1.0, shape=(4, 3)),
        Categorical(3, shape=(4, 3)),
        OneHot(3, shape=(4, 3)),
        Composite(a=Unbounded(shape=(4, 3, 2)), shape=(4, 3)),
    ],
    ids=lambda s: type(s).__name__,
)
def test_every_spec_follows_the_shape_convention(spec):
    assert isinstance(spec, TensorSpec)
    assert spec.ndim == 2
    assert spec.zero((5,)).shape == (5, 4, 3)
    assert spec.rand((5, 2)).shape == (5, 2, 4, 3)
    assert spec.is_in(spec.rand())
    assert spec.clone() == spec
    assert spec.cpu().device == torch.device("cpu")
    with pytest.raises(ValueError, match=r"assert_is_in: value"):
        spec.assert_is_in(spec.rand()[0])
    assert spec.one().shape == spec.ones().shape


def test_as_size():
    assert _as_size(3, "f") == (3,)
    assert _as_size([np.int64(2), 3], "f") == (2, 3)
    assert _as_size(torch.Size([1]), "f") == (1,)
    with pytest.raises(
        TypeError, match=r"f: expected shape to be a sequence of ints, got an element True"
    ):
        _as_size((True,), "f")
    with pytest.raises(TypeError, match=r"f: expected batch to be an int"):
        _as_size(None, "f", "batch")


def test_expand_to():
    assert _expand_to(torch.Size([1, 3]), (2, 5, -1), "f") == (2, 5, 3)
    with pytest.raises(ValueError, match=r"f: new leading dims must be non-negative"):
        _expand_to(torch.Size([3]), (-1, 3), "f")
    with pytest.raises(TypeError, match=r"f: expected ints in the new shape, got 'a'"):
        _expand_to(torch.Size([3]), ("a",), "f")


def test_reshape_to():
    assert _reshape_to(torch.Size([2, 3]), (-1,), "f") == (6,)
    assert _reshape_to(torch.Size([0, 3]), (3, 0), "f") == (3, 0)
    with pytest.raises(ValueError, match=r"f: expected non-negative dims and at most one -1"):
        _reshape_to(torch.Size([2, 3]), (-1, -1), "f")
    with pytest.raises(
        ValueError, match=r"f: cannot reshape shape \(2, 3\) \(6 elements\) to \(4, -1\)"
    ):
        _reshape_to(torch.Size([2, 3]), (4, -1), "f")


def test_norm_dim():
    assert _norm_dim(-1, 3, "f") == 2
    assert _norm_dim(0, 0, "f") == 0
    with pytest.raises(
        IndexError, match=r"f: dim 3 is out of range for 3 dims \(expected -3 to 2\)"
    ):
        _norm_dim(3, 3, "f")
    with pytest.raises(TypeError, match=r"f: expected an int dim, got 1.0"):
        _norm_dim(1.0, 3, "f")


def _leaf_specs():
    from rl_core.specs import Binary, MultiCategorical, MultiOneHot, NonTensor

    return [
        Unbounded(shape=(3,)),
        Bounded(-1.0, 1.0, shape=(3,)),
        Categorical(4, shape=(3,)),
        OneHot(3),
        MultiCategorical([2, 3]),
        MultiOneHot([2, 3]),
        Binary(3),
        NonTensor(shape=(3,)),
    ]


@pytest.mark.parametrize("spec", _leaf_specs(), ids=lambda s: type(s).__name__)
def test_torch_stack_of_equal_specs_adds_a_dim(spec):
    # TorchRL: torch.stack of equal specs is the same spec type with len(specs) inserted at dim.
    out = torch.stack([spec, spec.clone(), spec.clone()])
    assert type(out) is type(spec)
    assert out.shape == (3, *spec.shape)
    assert out == spec.unsqueeze(0).expand(3, *spec.shape)
    out = torch.stack([spec, spec], dim=-len(spec.shape) - 1)
    assert out.shape == (2, *spec.shape)
    assert out.dtype == spec.dtype


def test_torch_stack_batch_dim_and_composites():
    spec = Bounded(-1.0, 1.0, shape=(4, 3))
    assert torch.stack([spec, spec], dim=1).shape == (4, 2, 3)
    comp = Composite(obs=Unbounded(shape=(5, 3)), shape=(5,))
    out = torch.stack([comp, comp.clone()], 1)
    assert type(out) is Composite
    assert out.shape == (5, 2)
    assert out["obs"].shape == (5, 2, 3)


def test_torch_stack_of_different_specs_is_a_lazy_stack():
    from rl_core.specs import Stacked, StackedComposite

    out = torch.stack([Bounded(-1.0, 1.0, shape=(3,)), Bounded(0.0, 2.0, shape=(3,))])
    assert type(out) is Stacked
    assert out.shape == (2, 3)
    assert torch.stack([OneHot(3), OneHot(5)]).shape == (2, -1)
    mixed = torch.stack([Composite(a=Unbounded(shape=(3,))), Composite(b=Unbounded(shape=(2,)))])
    assert type(mixed) is StackedComposite
    assert mixed.shape == (2,)


def test_torch_stack_refuses_what_is_not_a_spec():
    with pytest.raises(TypeError, match=r"torch.stack: cannot stack a spec with a Tensor"):
        torch.stack([Unbounded(shape=(3,)), torch.zeros(3)])
    with pytest.raises(TypeError, match="out=None"):
        torch.stack([Unbounded(shape=(3,))] * 2, out=Unbounded(shape=(2, 3)))
    with pytest.raises(TypeError, match="cannot stack Composites with leaf specs"):
        torch.stack([Composite(), Unbounded()])
    with pytest.raises(TypeError):  # other torch functions are not defined on specs
        torch.cat([Unbounded(shape=(3,))] * 2)


def test_explicit_dtype_none_means_the_default():
    from rl_core.specs import Binary, MultiCategorical, MultiOneHot

    # Float specs: torch's default dtype, as TorchRL; the others: their documented default.
    assert Bounded(-1.0, 1.0, shape=(2,), dtype=None).dtype == torch.float32
    assert Unbounded(shape=(2,), dtype=None).dtype == torch.float32
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert Bounded(-1.0, 1.0, dtype=None).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)
    assert Categorical(3, dtype=None).dtype == torch.int64
    assert OneHot(3, dtype=None).dtype == torch.bool
    assert MultiCategorical([2, 3], dtype=None).dtype == torch.int64
    assert MultiOneHot([2, 3], dtype=None).dtype == torch.bool
    assert Binary(3, dtype=None).dtype == torch.int8


def test_to_a_dtype_casts_as_tensor_to_does():
    spec = Bounded(-1.0, 2.0, shape=(3,))
    cast = spec.to(torch.float64)
    assert cast.dtype == torch.float64
    assert cast.low.dtype == cast.high.dtype == torch.float64
    assert cast.low.tolist() == [-1.0] * 3
    assert cast.rand().dtype == torch.float64
    assert cast.is_in(torch.zeros(3, dtype=torch.float64))
    assert not cast.is_in(torch.zeros(3))
    assert spec.dtype == torch.float32  # the original is unchanged
    assert spec.to(torch.float32) is spec
    assert spec.to(torch.int64).rand().dtype == torch.int64
    assert Unbounded(shape=(2,)).to(torch.float16).zero().dtype == torch.float16
    assert OneHot(3).to(torch.int64).rand().sum().item() == 1
    assert Categorical(4).to(torch.int32).rand().dtype == torch.int32
    comp = Composite(obs=Unbounded(shape=(3,)), nested=Composite(x=Bounded(0.0, 1.0)))
    comp = comp.to(torch.float64)
    assert comp["obs"].dtype == comp["nested", "x"].dtype == torch.float64
    stacked = torch.stack([Bounded(-1.0, 1.0, shape=(3,)), Bounded(0.0, 2.0, shape=(3,))])
    assert stacked.to(torch.float64).rand().dtype == torch.float64


def test_to_a_dtype_the_spec_cannot_hold_is_refused():
    with pytest.raises(TypeError, match=r"Categorical.to: expected an integer dtype.*float32"):
        Categorical(3).to(torch.float32)
    with pytest.raises(TypeError, match=r"Bounded.to: dtype torch.bool is not supported"):
        Bounded(0.0, 1.0).to(torch.bool)
    with pytest.raises(ValueError, match=r"Bounded.to: low is infinite"):
        Bounded(float("-inf"), 0.0).to(torch.int64)
    with pytest.raises(TypeError, match=r"Composite.to: entry 'action'"):
        Composite(action=Categorical(3)).to(torch.float64)
