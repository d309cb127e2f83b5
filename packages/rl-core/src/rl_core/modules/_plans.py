"""Hands the policy-call and draw plans of ``rl_core._accel`` the classes of this package they
recognise (``PolicyClasses``): the plans import no module, and a module is correct without
them."""

from rl_core._accel.seam import PolicyClasses, register_policy_classes
from rl_core.modules._spec_utils import project_into
from rl_core.modules.actors import (
    Actor,
    ProbabilisticActor,
    ValueOperator,
    _SafeProbabilisticModule,
)
from rl_core.modules.distributions import OneHotCategorical, ReparamGradientStrategy, TanhNormal
from rl_core.modules.distributions._checks import validating
from rl_core.modules.distributions._tanh import _ClampedTanhTransform
from rl_core.modules.qvalue import QValueActor, QValueModule

register_policy_classes(
    PolicyClasses(
        actor=Actor,
        value_operator=ValueOperator,
        qvalue_actor=QValueActor,
        qvalue_module=QValueModule,
        probabilistic_actor=ProbabilisticActor,
        probabilistic_head=_SafeProbabilisticModule,
        project_into=project_into,
        one_hot_categorical=OneHotCategorical,
        tanh_normal=TanhNormal,
        validating=validating,
        clamped_tanh=_ClampedTanhTransform,
        reparam_strategy=ReparamGradientStrategy,
    )
)

__all__: list[str] = []
