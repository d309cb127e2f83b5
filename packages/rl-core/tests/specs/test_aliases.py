import pytest
import torch

from rl_core.specs import (
    Bounded,
    BoundedContinuous,
    BoundedDiscrete,
    Unbounded,
    UnboundedContinuous,
    UnboundedDiscrete,
)


def test_aliases_are_the_plain_specs_of_their_kind():
    # TorchRL 0.14 defaults: continuous -> float32, discrete -> int64.
    spec = BoundedContinuous(-1.0, 1.0, shape=(2,))
    assert isinstance(spec, Bounded)
    assert spec.dtype == torch.float32
    assert spec.domain == "continuous"
    assert spec == Bounded(-1.0, 1.0, shape=(2,))
    assert Bounded(-1.0, 1.0, shape=(2,)) == spec
    dice = BoundedDiscrete(1, 6)
    assert dice.dtype == torch.int64
    assert dice.cardinality() == 6
    assert bool(((dice.rand((100,)) >= 1) & (dice.rand((100,)) <= 6)).all())
    assert UnboundedContinuous(shape=(3,)).zero().dtype == torch.float32
    assert UnboundedDiscrete(shape=(3,)).rand().dtype == torch.int64
    assert UnboundedDiscrete(shape=(3,)) == Unbounded(shape=(3,), dtype=torch.int64)
    assert BoundedContinuous(0.0, 1.0, dtype=None).dtype == torch.get_default_dtype()
    assert BoundedDiscrete(0, 1, dtype=None).dtype == torch.int64
    # Shape operations and casts keep the class.
    assert type(spec.expand(4, 2)) is BoundedContinuous
    assert type(spec.to(torch.float64)) is BoundedContinuous


def test_aliases_refuse_the_other_kind():
    with pytest.raises(TypeError, match=r"BoundedContinuous: expected a floating dtype"):
        BoundedContinuous(0, 1, dtype=torch.int64)
    with pytest.raises(TypeError, match=r"BoundedDiscrete: expected an integer dtype"):
        BoundedDiscrete(0, 1, dtype=torch.float32)
    with pytest.raises(TypeError, match=r"UnboundedContinuous: expected a floating dtype"):
        UnboundedContinuous(dtype=torch.int32)
    with pytest.raises(TypeError, match=r"UnboundedDiscrete: expected an integer dtype"):
        UnboundedDiscrete(dtype=torch.bool)
    with pytest.raises(TypeError, match=r"BoundedContinuous.to: expected a floating dtype"):
        BoundedContinuous(0.0, 1.0).to(torch.int64)
