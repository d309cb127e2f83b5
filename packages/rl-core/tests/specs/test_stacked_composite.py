import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from rl_core.specs import (
    Bounded,
    Composite,
    OneHot,
    Stacked,
    StackedComposite,
    Unbounded,
    stack_specs,
)


def agents() -> list[Composite]:
    walker = Composite(
        obs=Unbounded(shape=(4, 3)), action=Bounded(-1.0, 1.0, shape=(4, 2)), shape=(4,)
    )
    flyer = Composite(obs=Unbounded(shape=(4, 5)), action=OneHot(3, shape=(4, 3)), shape=(4,))
    return [walker, flyer]


def test_rand_gives_a_lazy_stack():
    spec = stack_specs(agents())
    assert isinstance(spec, StackedComposite)
    assert spec.shape == (2, 4)
    td = spec.rand()
    assert isinstance(td, LazyStackedTensorDict)
    assert td.batch_size == (2, 4)
    assert td[0]["obs"].shape == (4, 3)
    assert td[1]["action"].dtype is torch.bool
    assert spec.is_in(td)
    batched = spec.zero((5,))
    assert batched.batch_size == (5, 2, 4)
    assert spec.one()[1]["obs"].sum() == 20


def test_stack_at_a_later_batch_dim():
    spec = stack_specs(agents(), dim=1)
    assert spec.shape == (4, 2)
    td = spec.rand()
    assert td.batch_size == (4, 2)
    assert spec.is_in(td)
    assert spec[:, 0] == agents()[0]


def test_is_in_messages_name_the_slice():
    spec = stack_specs(agents())
    td = spec.rand()
    td[1]["obs"] = torch.zeros(4, 5, dtype=torch.float64)
    with pytest.raises(
        ValueError,
        match=r"^Unbounded.assert_is_in: value at key 'obs' has dtype torch.float64, expected "
        r"torch.float32 \(slice 1 along stack dim 0\)\.$",
    ):
        spec.assert_is_in(td)
    with pytest.raises(
        ValueError,
        match=r"^StackedComposite.assert_is_in: value has batch size \(4,\), expected 2 slices "
        r"along dim 0 \(shape \(2, 4\)\)\.$",
    ):
        spec.assert_is_in(TensorDict({}, [4]))
    with pytest.raises(ValueError, match=r"StackedComposite.assert_is_in: value is a dict"):
        spec.assert_is_in({})


def test_keys_and_entries():
    spec = stack_specs(agents())
    assert spec.keys() == ["obs", "action"]
    assert "obs" in spec
    assert "legs" not in spec
    obs = spec["obs"]
    assert isinstance(obs, Stacked)
    assert obs.shape == (2, 4, -1)
    with_extra = agents()
    with_extra[0]["legs"] = Unbounded(shape=(4, 2))
    stacked = stack_specs(with_extra)
    assert stacked.keys() == ["obs", "action"]
    with pytest.raises(KeyError, match=r"StackedComposite: member 1 has no entry at key 'legs'"):
        stacked["legs"]
    same = stack_specs([Composite(x=Unbounded(shape=(4, 1)), shape=(4,))] * 2)
    assert isinstance(same, Composite)


def test_project_encode_to_numpy():
    spec = stack_specs(agents())
    td = spec.rand()
    td[0]["action"] = torch.full((4, 2), 3.0)
    projected = spec.project(td)
    assert isinstance(projected, LazyStackedTensorDict)
    assert spec.is_in(projected)
    arrays = spec.to_numpy(spec.rand())
    assert isinstance(arrays, list)
    assert arrays[1]["action"].shape == (4,)  # OneHot.to_numpy gives indices
    back = spec.encode(arrays)
    assert spec.is_in(back)


def test_shape_operations_and_errors():
    spec = stack_specs(agents())
    assert spec[0] == agents()[0]
    expanded = spec.expand(3, 2, 4)
    assert expanded.rand().batch_size == (3, 2, 4)
    assert spec.unsqueeze(-1).shape == (2, 4, 1)
    assert spec.unsqueeze(-1).squeeze(-1) == spec
    assert spec.clone() == spec
    with pytest.raises(TypeError, match=r"StackedComposite: expected Composites \(use Stacked"):
        StackedComposite(Unbounded(), Unbounded())
    with pytest.raises(IndexError, match=r"StackedComposite: dim 2 is out of range for 2 dims"):
        StackedComposite(*agents(), dim=2)
    assert repr(spec).startswith("StackedComposite(\n    Composite(\n        obs: Unbounded")
