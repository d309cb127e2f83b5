"""Action distributions that tensordict's ``ProbabilisticTensorDictModule`` can build.

Each one is a :class:`torch.distributions.Distribution` with the three attributes that the
exploration types read (see :mod:`rl_core.exploration`): ``mode``, ``mean`` and
``deterministic_sample``. Each class documents what it returns under every type.
"""

from rl_core.modules.distributions.continuous import IndependentNormal, TanhNormal
from rl_core.modules.distributions.deterministic import Delta, TanhDelta
from rl_core.modules.distributions.discrete import (
    MaskedCategorical,
    MaskedOneHotCategorical,
    OneHotCategorical,
    ReparamGradientStrategy,
)
from rl_core.modules.distributions.truncated_normal import TruncatedNormal

__all__ = [
    "TanhNormal",
    "IndependentNormal",
    "TruncatedNormal",
    "Delta",
    "TanhDelta",
    "OneHotCategorical",
    "MaskedCategorical",
    "MaskedOneHotCategorical",
    "ReparamGradientStrategy",
]
