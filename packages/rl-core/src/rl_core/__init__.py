"""The TensorDict contract shared by every package of the stack.

Specs, the TED layout (:mod:`rl_core.keys`, :func:`step_mdp`), the exploration context,
``EnvBase`` and the transform machinery are re-exported here. Policy modules, distributions,
the ``LossModule`` base and the op schemas live in :mod:`rl_core.modules`,
:mod:`rl_core.objectives` and :mod:`rl_core.ops`.
"""

# ruff: noqa: E402  (the version guard runs before the imports it protects)
from importlib.metadata import version as _version

from rl_core.compat import check_installed as _check_installed

# First: an out-of-range torch or tensordict fails here, by name, not in some import below.
_check_installed("rl-core", "torch", "tensordict")

from rl_core import compat, keys, modules, objectives, ops, testing
from rl_core.envs import (
    EnvBase,
    RandomPolicy,
    check_env_specs,
    set_spec_checks,
    spec_checks_enabled,
)
from rl_core.exploration import ExplorationType, exploration_type, set_exploration_type
from rl_core.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    Stacked,
    StackedComposite,
    TensorSpec,
    Unbounded,
    make_composite_from_td,
    stack_specs,
)
from rl_core.ted import step_mdp, terminated_or_truncated
from rl_core.transforms import (
    Compose,
    InitTracker,
    StepCounter,
    TensorDictPrimer,
    Transform,
    TransformedEnv,
    auto_unwrap_transformed_env,
    set_auto_unwrap_transformed_env,
)

__version__ = _version("rl-core")

__all__ = [
    "__version__",
    # subpackages
    "compat",
    "keys",
    "modules",
    "objectives",
    "ops",
    "testing",
    # specs
    "TensorSpec",
    "Unbounded",
    "Bounded",
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
    # TED and exploration
    "step_mdp",
    "terminated_or_truncated",
    "ExplorationType",
    "exploration_type",
    "set_exploration_type",
    # envs and transforms
    "EnvBase",
    "RandomPolicy",
    "check_env_specs",
    "set_spec_checks",
    "spec_checks_enabled",
    "Transform",
    "TransformedEnv",
    "Compose",
    "StepCounter",
    "InitTracker",
    "TensorDictPrimer",
    "auto_unwrap_transformed_env",
    "set_auto_unwrap_transformed_env",
]
