"""Tensor specs, as a TorchRL user tests them (written for TorchRL's API)."""

import pytest
import torch
from tensordict import TensorDict
from torchrl.data import (
    Binary,
    Bounded,
    BoundedContinuous,
    Categorical,
    Composite,
    OneHot,
    Unbounded,
    UnboundedContinuous,
)
from torchrl.data.tensor_specs import MultiOneHot


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_bounded_rand_is_in(dtype, shape):
    torch.manual_seed(0)
    spec = Bounded(low=-1.0, high=2.0, shape=shape, dtype=dtype)
    sample = spec.rand((5,))
    assert sample.shape == (5, *shape)
    assert sample.dtype == dtype
    assert spec.is_in(sample)
    assert (sample >= -1).all()
    assert (sample <= 2).all()


def test_bounded_project_clamps():
    spec = Bounded(-1.0, 1.0, shape=(3,))
    projected = spec.project(torch.tensor([3.0, 0.25, -5.0]))
    torch.testing.assert_close(projected, torch.tensor([1.0, 0.25, -1.0]))
    assert not spec.is_in(torch.tensor([3.0, 0.25, -5.0]))


def test_unbounded_zero_and_dtype():
    spec = Unbounded(shape=(4,), dtype=torch.float64)
    assert (spec.zero() == 0).all()
    assert spec.zero().dtype == torch.float64
    assert spec.rand().shape == (4,)


def test_categorical_and_onehot():
    torch.manual_seed(1)
    cat = Categorical(5)
    samples = cat.rand((100,))
    assert samples.dtype == torch.int64
    assert ((samples >= 0) & (samples < 5)).all()
    onehot = OneHot(5)
    sample = onehot.rand()
    assert sample.shape == (5,)
    assert sample.sum() == 1
    assert onehot.is_in(sample)
    assert not onehot.is_in(torch.ones(5, dtype=torch.bool))


def test_binary_and_multionehot():
    binary = Binary(n=4)
    assert binary.rand().shape == (4,)
    assert binary.is_in(binary.rand())
    multi = MultiOneHot(nvec=[2, 3])
    sample = multi.rand()
    assert sample.shape == (5,)
    assert sample[:2].sum() == 1
    assert sample[2:].sum() == 1


def test_composite_rand_zero_and_nesting():
    spec = Composite(
        observation=Unbounded(shape=(2, 3)),
        nested=Composite(action=Bounded(-1, 1, shape=(2, 1)), shape=(2,)),
        shape=(2,),
    )
    sample = spec.rand()
    assert isinstance(sample, TensorDict)
    assert sample.batch_size == (2,)
    assert sample["nested", "action"].shape == (2, 1)
    assert spec.is_in(sample)
    assert (spec.zero()["observation"] == 0).all()
    assert set(spec.keys(True, True)) == {"observation", ("nested", "action")}


def test_composite_expand():
    spec = Composite(observation=Unbounded(shape=(3,)), shape=())
    expanded = spec.expand(4)
    assert expanded.shape == (4,)
    assert expanded["observation"].shape == (4, 3)


def test_torch_stack_of_specs():
    spec = Bounded(-1.0, 1.0, shape=(3,))
    stacked = torch.stack([spec, spec], 0)
    assert stacked.shape == (2, 3)
    assert stacked.is_in(torch.zeros(2, 3))
    assert not stacked.is_in(torch.full((2, 3), 2.0))


def test_continuous_spec_names():
    bounded = BoundedContinuous(low=-1.0, high=1.0, shape=(2,))
    assert bounded.dtype == torch.float32
    assert bounded.is_in(bounded.rand())
    assert bounded == Bounded(low=-1.0, high=1.0, shape=(2,))
    unbounded = UnboundedContinuous(shape=(3,))
    assert unbounded.dtype == torch.float32
    assert unbounded.rand().shape == (3,)
