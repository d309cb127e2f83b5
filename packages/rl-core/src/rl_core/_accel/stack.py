"""What a TransformedEnv's plan reads of the env and of its transforms: the named interface
(:class:`TransformedPlanEnv`) and the facts the ``TransformedEnv`` reads of its transforms when
it builds the plan (:class:`TransformStack`), so that this folder imports no env or transform.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tensordict import TensorDictBase

from rl_core._accel.step_plan import PlanEnv

if TYPE_CHECKING:
    from rl_core.specs import Composite


@dataclass(frozen=True)
class TransformStack:
    """What a TransformedEnv's plan needs to know of its transforms, read by the
    ``TransformedEnv`` itself when it builds the plan (so this folder imports no transform).

    Args:
        transform: the env's transform (a ``Compose`` or one transform).
        lane_parts: the transforms the numpy-row lane runs in order: the children of a
            ``Compose`` (exactly that class), else ``[transform]``.
        intercepts_reset: whether a transform of the list (a ``Compose``'s children, at the
            first level) overrides ``Transform.intercept_reset``.
        has_inverse: whether the inverse path does anything (``transform.has_inverse``).
        trajectory_writer: ``TrajectoryWriter``: ``trajectory_writer(max_steps)`` collects a
            rollout's steps (the random-rollout replay's).
    """

    transform: Any
    lane_parts: list[Any]
    intercepts_reset: bool
    has_inverse: bool
    trajectory_writer: Callable[[int], Any]


class TransformedPlanEnv(PlanEnv, Protocol):
    """What a TransformedEnv's plan reads of the env (``TransformedEnv`` has it): the
    :class:`PlanEnv` interface, its keys and specs, its base env and two underscore-free
    methods: :meth:`base_reset` and :meth:`outputs_hidden_from_base`."""

    @property
    def base_env(self) -> Any: ...

    @property
    def observation_keys(self) -> list: ...

    @property
    def done_keys(self) -> list: ...

    @property
    def reward_keys(self) -> list: ...

    @property
    def state_keys(self) -> list: ...

    @property
    def reset_keys(self) -> list: ...

    @property
    def full_done_spec(self) -> Composite: ...

    def base_reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        """The base env's reset output (a transform's ``intercept_reset`` answer, else the
        base env's own reset)."""
        ...

    def outputs_hidden_from_base(self) -> list:
        """This env's outputs the base env does not read, left out of what it is handed."""
        ...


__all__ = ["TransformStack", "TransformedPlanEnv"]
