"""Property tests over random specs, shapes, dtypes and nested layouts."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensordict import TensorDict, TensorDictBase, is_non_tensor

from rl_core.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    TensorSpec,
    Unbounded,
    stack_specs,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

batch_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
float_dtypes = st.sampled_from([torch.float32, torch.float64, torch.float16, torch.bfloat16])
int_dtypes = st.sampled_from([torch.int64, torch.int32, torch.int16, torch.uint8])


def _mask(seed: int, shape: tuple[int, ...], blocks: list[int]) -> torch.Tensor:
    """A random mask with at least one valid choice in every block of every row."""
    gen = torch.Generator().manual_seed(seed)
    mask = torch.rand(shape, generator=gen) < 0.5
    start = 0
    for n in blocks:
        pick = torch.randint(start, start + n, shape[:-1], generator=gen)
        mask.scatter_(-1, pick.unsqueeze(-1), True)
        start += n
    return mask


@st.composite
def leaf_specs(draw: st.DrawFn, batch: tuple[int, ...] | None = None) -> TensorSpec:
    batch = draw(batch_shapes) if batch is None else batch
    kind = draw(
        st.sampled_from(
            [
                "unbounded",
                "bounded",
                "bounded_int",
                "categorical",
                "one_hot",
                "multi_cat",
                "multi_one_hot",
                "binary",
                "non_tensor",
            ]
        )
    )
    masked = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    if kind == "unbounded":
        dtype = draw(st.one_of(float_dtypes, int_dtypes, st.just(torch.bool)))
        event = draw(st.lists(st.integers(1, 3), max_size=1))
        return Unbounded(shape=(*batch, *event), dtype=dtype)
    if kind == "bounded":
        event = tuple(draw(st.lists(st.integers(1, 3), max_size=1)))
        shape = (*batch, *event)
        gen = torch.Generator().manual_seed(seed)
        low = torch.randn(shape, generator=gen, dtype=torch.float64) * 10
        high = low + torch.rand(shape, generator=gen, dtype=torch.float64) * 10
        if draw(st.booleans()) and low.numel():
            high.view(-1)[0] = math.inf
        return Bounded(low, high, dtype=draw(st.sampled_from([torch.float32, torch.float64])))
    if kind == "bounded_int":
        lo = draw(st.integers(0, 20))
        hi = draw(st.integers(lo, 40))
        return Bounded(lo, hi, shape=batch, dtype=draw(int_dtypes))
    if kind == "categorical":
        n = draw(st.integers(1, 5))
        mask = _mask(seed, (*batch, n), [n]) if masked else None
        return Categorical(n, shape=batch, dtype=draw(int_dtypes), mask=mask)
    if kind == "one_hot":
        n = draw(st.integers(1, 5))
        mask = _mask(seed, (*batch, n), [n]) if masked else None
        dtype = draw(st.sampled_from([torch.bool, torch.int64, torch.float32]))
        return OneHot(n, shape=(*batch, n), dtype=dtype, mask=mask)
    nvec = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    if kind == "multi_cat":
        mask = _mask(seed, (*batch, sum(nvec)), nvec) if masked else None
        return MultiCategorical(nvec, shape=(*batch, len(nvec)), mask=mask)
    if kind == "multi_one_hot":
        mask = _mask(seed, (*batch, sum(nvec)), nvec) if masked else None
        dtype = draw(st.sampled_from([torch.bool, torch.int64]))
        return MultiOneHot(nvec, shape=(*batch, sum(nvec)), dtype=dtype, mask=mask)
    if kind == "binary":
        n = draw(st.integers(1, 4))
        dtype = draw(st.sampled_from([torch.int8, torch.bool, torch.float32]))
        return Binary(n, shape=(*batch, n), dtype=dtype)
    return NonTensor(shape=batch, example_data=draw(st.text(max_size=3)))


@st.composite
def composites(draw: st.DrawFn, batch: tuple[int, ...] | None = None, depth: int = 2) -> Composite:
    batch = draw(batch_shapes) if batch is None else batch
    keys = draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=3, unique=True))
    entries: dict[str, TensorSpec | None] = {}
    for key in keys:
        choice = draw(st.integers(0, 9))
        if choice == 0:
            entries[key] = None
        elif choice == 1 and depth > 0:
            extra = tuple(draw(st.lists(st.integers(1, 2), max_size=1)))
            entries[key] = draw(composites(batch=(*batch, *extra), depth=depth - 1))
        else:
            entries[key] = draw(leaf_specs(batch=batch))
    return Composite(entries, shape=batch)


any_spec = st.one_of(leaf_specs(), composites())


def _leaves(spec: TensorSpec) -> list[TensorSpec]:
    if isinstance(spec, Composite):
        return [s for s in spec.values(True, True) if s is not None]
    return [spec]


def _same(a: object, b: object) -> bool:
    if isinstance(a, TensorDictBase):
        assert isinstance(b, TensorDictBase)
        keys = a.keys(True, True)
        return set(keys) == set(b.keys(True, True)) and all(_same(a.get(k), b.get(k)) for k in keys)
    if is_non_tensor(a):
        return is_non_tensor(b) and a.tolist() == b.tolist()
    return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)


@SETTINGS
@given(spec=any_spec, lead=batch_shapes)
def test_rand_is_in_the_space(spec: TensorSpec, lead: tuple[int, ...]) -> None:
    spec.assert_is_in(spec.rand())
    spec.expand(*lead, *spec.shape).assert_is_in(spec.rand(lead))


def _random_input(spec: TensorSpec, seed: int, scale: float) -> object:
    gen = torch.Generator().manual_seed(seed)
    if isinstance(spec, Composite):
        out = {}
        for key, leaf in spec.items():
            if leaf is not None:
                out[key] = _random_input(leaf, seed + 1, scale)
        return TensorDict(out, batch_size=spec.shape)
    if isinstance(spec, NonTensor):
        return spec.zero()
    values = torch.randn(spec.shape, generator=gen, dtype=torch.float64) * scale
    if values.numel() > 1:
        values.view(-1)[0] = float("nan")
        values.view(-1)[-1] = float("inf")
    return values


@SETTINGS
@given(spec=any_spec, seed=st.integers(0, 2**16), scale=st.sampled_from([0.5, 10.0, 1e4]))
def test_project_lands_inside(spec: TensorSpec, seed: int, scale: float) -> None:
    value = _random_input(spec, seed, scale)
    spec.assert_is_in(spec.project(value))


def _batched_input(spec: TensorSpec, lead: tuple[int, ...], seed: int, scale: float) -> object:
    if isinstance(spec, NonTensor):
        return spec.zero(lead)
    gen = torch.Generator().manual_seed(seed)
    values = torch.randn((*lead, *spec.shape), generator=gen, dtype=torch.float64) * scale
    if values.numel() > 1:
        values.view(-1)[0] = float("nan")
    return values


@SETTINGS
@given(
    spec=leaf_specs(),
    lead=st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple),
    seed=st.integers(0, 2**16),
    scale=st.sampled_from([0.5, 10.0, 1e4]),
)
def test_batched_project_and_is_in_agree_elementwise(
    spec: TensorSpec, lead: tuple[int, ...], seed: int, scale: float
) -> None:
    # Leading batch dims: project maps each element as the spec does, and is_in accepts the
    # result (a policy's batched output is projected and checked by the unbatched spec).
    value = _batched_input(spec, lead, seed, scale)
    projected = spec.project(value)
    assert spec.is_in(projected)
    expected = spec.expand(*lead, *spec.shape).project(value)
    if isinstance(spec, NonTensor):
        assert _same(projected, expected)
        return
    torch.testing.assert_close(projected, expected, rtol=0, atol=0, equal_nan=True)
    first = spec.project(value.reshape(-1, *spec.shape)[0])
    torch.testing.assert_close(
        projected.reshape(-1, *spec.shape)[0], first, rtol=0, atol=0, equal_nan=True
    )
    assert spec.is_in(spec.rand(lead))


@pytest.mark.parametrize(
    ("spec", "outside"),
    [
        (Bounded(0.0, 1.0, shape=(3,)), [0.5, 0.5, 2.0]),
        (Categorical(4, shape=(3,)), [0, 1, 4]),
        (OneHot(4), [True, True, False, False]),
        (MultiCategorical([2, 3]), [1, 3]),
        (MultiOneHot([2, 3]), [True, False, False, False, False]),
        (Binary(3, dtype=torch.int8), [0, 1, 2]),
    ],
    ids=lambda value: type(value).__name__,
)
def test_batched_values_outside_are_refused(spec: TensorSpec, outside: list) -> None:
    inside = spec.rand((2,))
    bad = torch.stack([inside[0], torch.tensor(outside, dtype=spec.dtype)])
    assert spec.is_in(inside)
    assert not spec.is_in(bad)
    with pytest.raises(ValueError, match=r"assert_is_in: value .*index \(1,"):
        spec.assert_is_in(bad)
    assert spec.is_in(spec.project(bad))
    with pytest.raises(ValueError, match=r"project: expected shape"):
        spec.project(torch.zeros(2, 7))


@SETTINGS
@given(spec=any_spec)
def test_encode_inverts_to_numpy(spec: TensorSpec) -> None:
    value = spec.rand()
    assert _same(spec.encode(spec.to_numpy(value)), value)


def _zero_should_be_in(spec: TensorSpec) -> bool:
    if isinstance(spec, OneHot | MultiOneHot):
        return spec.shape.numel() == 0
    if isinstance(spec, Bounded):
        return bool(((spec.low <= 0) & (spec.high >= 0)).all())
    if isinstance(spec, Categorical):
        return spec.mask is None or bool(spec.mask[..., 0].all())
    if isinstance(spec, MultiCategorical):
        if spec.mask is None:
            return True
        starts = torch.tensor([0, *spec.nvec.cumsum(0)[:-1].tolist()])
        return bool(spec.mask[..., starts].all())
    return True


@SETTINGS
@given(spec=any_spec)
def test_zero_is_in_the_space_where_it_should_be(spec: TensorSpec) -> None:
    expected = all(_zero_should_be_in(leaf) for leaf in _leaves(spec))
    assert spec.is_in(spec.zero()) == expected
    if not expected:
        with pytest.raises(ValueError, match="assert_is_in: value"):
            spec.assert_is_in(spec.zero())


@SETTINGS
@given(spec=any_spec)
def test_shape_operations_commute_with_values(spec: TensorSpec) -> None:
    value = spec.rand()
    assert spec.clone() == spec
    assert spec.unsqueeze(0).is_in(value.unsqueeze(0))
    batch_ndim = spec.ndim - getattr(spec, "_event_ndim", 0)
    if batch_ndim and spec.shape[0] > 0:
        assert spec[0].is_in(value[0])
        assert spec[-1:].is_in(value[-1:])
        assert spec.unsqueeze(0).squeeze(0) == spec


@SETTINGS
@given(data=st.data(), batch=st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple))
def test_stack_specs_checks_each_slice(data: st.DataObject, batch: tuple[int, ...]) -> None:
    specs = [data.draw(leaf_specs(batch=batch)) for _ in range(data.draw(st.integers(1, 3)))]
    specs = [s for s in specs if s.ndim == specs[0].ndim]
    stacked = stack_specs(specs)
    value = stacked.rand()
    stacked.assert_is_in(value)
    assert stacked.is_in(stacked.project(value))
    composites_ = [data.draw(composites(batch=batch, depth=1)) for _ in range(2)]
    stacked_td = stack_specs(composites_)
    stacked_td.assert_is_in(stacked_td.rand())


def test_masked_rand_never_picks_a_masked_action() -> None:
    torch.manual_seed(0)
    mask = _mask(3, (50, 6), [6])
    samples = Categorical(6, shape=(50,), mask=mask).rand((40,))
    assert bool(mask.gather(-1, samples.T).all())
