"""``spec.space``: TorchRL's record of the values a spec allows, hand-written expectations."""

import pytest
import torch

from rl_core.specs import (
    Binary,
    Bounded,
    BoxList,
    Categorical,
    CategoricalBox,
    Composite,
    ContinuousBox,
    DiscreteBox,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    Unbounded,
)


def test_bounded_space_holds_the_specs_own_bounds():
    spec = Bounded(low=torch.tensor([-1.0, 0.0]), high=torch.tensor([2.0, 3.0]))
    space = spec.space
    assert isinstance(space, ContinuousBox)
    assert space.low.tolist() == [-1.0, 0.0]
    assert space.high.tolist() == [2.0, 3.0]
    assert space.low is spec.low
    assert space.high is spec.high


@pytest.mark.parametrize(
    ("dtype", "low", "high"),
    [
        (torch.float32, -3.4028234663852886e38, 3.4028234663852886e38),
        (torch.int32, -(2**31), 2**31 - 1),
        (torch.bool, False, True),
    ],
)
def test_unbounded_space_is_the_dtypes_range(dtype, low, high):
    space = Unbounded(shape=(2, 1), dtype=dtype).space
    assert space.low.shape == (2, 1)
    assert space.low.dtype == dtype
    assert space.low.flatten().tolist() == [low, low]
    assert space.high.flatten().tolist() == [high, high]


def test_discrete_spaces_as_torchrl_names_them():
    assert Categorical(4).space == CategoricalBox(4)
    assert OneHot(3).space.n == 3
    assert Binary(5).space == CategoricalBox(2)  # TorchRL: each entry has two values
    assert MultiCategorical([3, 2]).space == BoxList((CategoricalBox(3), CategoricalBox(2)))
    assert [box.n for box in MultiOneHot([2, 4]).space] == [2, 4]
    assert BoxList.from_nvec(torch.tensor(7)) == CategoricalBox(7)
    assert isinstance(DiscreteBox(2), CategoricalBox)
    assert NonTensor().space is None
    assert Composite().space is None
