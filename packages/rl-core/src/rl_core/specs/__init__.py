"""Tensor specs: the shape, dtype, device and domain of every entry an env reads or writes.

See :class:`TensorSpec` for the shape convention (``spec.shape`` includes the batch dims).
"""

from rl_core.specs._base import TensorSpec
from rl_core.specs._box import BinaryBox, Box, BoxList, CategoricalBox, ContinuousBox, DiscreteBox
from rl_core.specs.aliases import (
    BoundedContinuous,
    BoundedDiscrete,
    UnboundedContinuous,
    UnboundedDiscrete,
)
from rl_core.specs.binary import Binary
from rl_core.specs.bounded import Bounded
from rl_core.specs.categorical import Categorical
from rl_core.specs.composite import Composite
from rl_core.specs.multi_categorical import MultiCategorical
from rl_core.specs.multi_one_hot import MultiOneHot
from rl_core.specs.non_tensor import NonTensor
from rl_core.specs.one_hot import OneHot
from rl_core.specs.stacked import Stacked
from rl_core.specs.stacked_composite import StackedComposite, stack_specs
from rl_core.specs.unbounded import Unbounded
from rl_core.specs.utils import make_composite_from_td

__all__ = [
    "TensorSpec",
    "Unbounded",
    "Bounded",
    "UnboundedContinuous",
    "UnboundedDiscrete",
    "BoundedContinuous",
    "BoundedDiscrete",
    "Categorical",
    "OneHot",
    "MultiCategorical",
    "MultiOneHot",
    "Binary",
    "NonTensor",
    "Composite",
    "Stacked",
    "StackedComposite",
    "stack_specs",
    "make_composite_from_td",
    "Box",
    "ContinuousBox",
    "CategoricalBox",
    "DiscreteBox",
    "BinaryBox",
    "BoxList",
]
