"""The classes of ``rl_core.modules`` that the policy-call and draw plans know, handed over by
``rl_core.modules`` itself (``rl_core.modules._plans``), so that this folder imports no module.

A plan recognises a module or a distribution by its exact class: a subclass, or a class
nobody registered, takes the generic call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PolicyClasses:
    """rl_core's policy classes and the pieces of its distributions the plans replicate.

    Args:
        actor: ``Actor`` (a ``TensorDictModule`` that projects into its spec when safe).
        value_operator: ``ValueOperator``.
        qvalue_actor: ``QValueActor`` (a sequence).
        qvalue_module: ``QValueModule``.
        probabilistic_actor: ``ProbabilisticActor``.
        probabilistic_head: its last module, ``_SafeProbabilisticModule``.
        project_into: ``project_into(tensordict, spec)``, what a safe module does with its
            outputs.
        one_hot_categorical: ``OneHotCategorical``.
        tanh_normal: ``TanhNormal``.
        validating: ``validating(validate_args)``: whether a distribution checks its
            arguments.
        clamped_tanh: the tanh transform ``TanhNormal`` builds (``clamped_tanh(clamp=...)``).
        reparam_strategy: ``ReparamGradientStrategy``.
    """

    actor: type
    value_operator: type
    qvalue_actor: type
    qvalue_module: type
    probabilistic_actor: type
    probabilistic_head: type
    project_into: Callable[[Any, Any], None]
    one_hot_categorical: type
    tanh_normal: type
    validating: Callable[[bool | None], bool]
    clamped_tanh: Callable[..., Any]
    reparam_strategy: Any


class _Registered:
    """The registered classes (``None`` until ``rl_core.modules`` is imported: every policy
    then takes the generic call)."""

    classes: PolicyClasses | None = None


REGISTERED = _Registered()


def register_policy_classes(classes: PolicyClasses) -> None:
    """Hands the plans rl_core's policy classes (called once, by ``rl_core.modules``).

    Raises:
        TypeError: ``classes`` is not a :class:`PolicyClasses`.
    """
    if not isinstance(classes, PolicyClasses):
        raise TypeError(
            f"register_policy_classes: expected a PolicyClasses, got {type(classes).__name__}."
        )
    REGISTERED.classes = classes


__all__ = ["REGISTERED", "PolicyClasses", "register_policy_classes"]
