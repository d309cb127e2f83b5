"""What the gymnasium numpy-row paths read of rl-envs' gym wrappers, and where they apply.

The speed folder imports no other rl-envs folder. ``rl_envs.libs.gym`` hands it the two parts
of its own that the paths need (:class:`GymParts`: the ``GymWrapper`` class and the action
encoder factory) through :func:`register_gym_parts`; until then no env is a ``GymWrapper`` and
no numpy-row path applies. A plan reads a wrapper through :class:`GymPlanEnv`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from tensordict import TensorDictBase

from rl_core.keys import OBSERVATION
from rl_core.specs import Composite


class GymPlanEnv(Protocol):
    """What a gymnasium plan reads of its wrapper (``GymWrapper`` implements it).

    Besides the wrapper's public API (``batch_size``, ``device``, ``name``, specs, spaces,
    ``from_pixels``, ``autoreset_mode``, ``info_dict_reader``) and the reference hook ``_step``:
    the stepper and the row blocks its steps and resets write into, and the reference's
    own readers of actions, observations and reset flags, so that a plan writes what the
    reference writes.
    """

    @property
    def batch_size(self) -> torch.Size: ...

    @property
    def device(self) -> torch.device | None: ...

    @property
    def name(self) -> str: ...

    @property
    def action_spec(self) -> Any: ...

    @property
    def observation_spec(self) -> Composite: ...

    @property
    def single_observation_space(self) -> Any: ...

    @property
    def single_action_space(self) -> Any: ...

    @property
    def from_pixels(self) -> bool: ...

    @property
    def autoreset_mode(self) -> str | None: ...

    @property
    def info_dict_reader(self) -> list: ...

    _stepper: Any  # rl_envs.libs._gym_stepper.GymNumpyStepper
    _rows: Any  # the step rows (rl_envs.libs._gym_rows.StepRows)
    _reset_rows: Any  # the rows of fused resets
    _rows_only: bool  # every step output goes into the rows
    _info_readers: list
    _cpu_device: torch.device | None
    _target_device: torch.device | None

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase: ...

    def _read_action(self, tensordict: TensorDictBase) -> Any: ...

    def _observations(self, obs: Any) -> dict[str, Any]: ...

    def _reset_flags(self) -> tuple[torch.Tensor, ...]: ...


@dataclass(frozen=True)
class GymParts:
    """The parts of ``rl_envs.libs`` the numpy-row paths need.

    Attributes:
        wrapper: the ``GymWrapper`` class (the paths drive its gymnasium env directly, so a
            subclass overriding a step, reset or seed method keeps the reference).
        make_encoder: ``make_encoder(space, spec, batch)``, the action encoder factory.
    """

    wrapper: type
    make_encoder: Callable[..., Any]


_PARTS: list[GymParts] = []


def register_gym_parts(parts: GymParts) -> None:
    """Hands the paths rl-envs' gym parts (called once by ``rl_envs.libs.gym``).

    Raises:
        TypeError: ``parts`` is not a :class:`GymParts`.
    """
    if not isinstance(parts, GymParts):
        raise TypeError(f"register_gym_parts: expected a GymParts, got {type(parts).__name__}.")
    _PARTS[:] = [parts]


def gym_parts() -> GymParts | None:
    """The registered parts, or ``None`` before ``rl_envs.libs.gym`` is imported."""
    return _PARTS[0] if _PARTS else None


_OWN_METHODS = ("_step", "_reset", "_set_seed", "step", "reset", "step_and_maybe_reset", "set_seed")


def runs_own_steps(env: Any) -> bool:
    """Whether ``env`` is a ``GymWrapper`` that steps, resets and seeds as GymWrapper does.

    False for other envs and for subclasses overriding a step, reset or seed method (``_step``,
    ``_reset``, ``_set_seed``, ``step``, ``reset``, ``step_and_maybe_reset``, ``set_seed``):
    a fast path that drives the gymnasium env directly would skip the override.

    Examples:
        >>> from rl_envs.libs import GymEnv
        >>> class Shaped(GymEnv):
        ...     def _step(self, tensordict):
        ...         return super()._step(tensordict)
        >>> runs_own_steps(GymEnv("CartPole-v1")), runs_own_steps(Shaped("CartPole-v1"))
        (True, False)
    """
    parts = gym_parts()
    if parts is None or not isinstance(env, parts.wrapper):
        return False
    kind = type(env)
    return all(getattr(kind, name) is getattr(parts.wrapper, name) for name in _OWN_METHODS)


def numpy_rows_apply(wrapper: GymPlanEnv) -> bool:
    """Whether ``wrapper``'s steps are plain arrays that the numpy-row paths can move.

    True for wrappers that step as ``GymWrapper`` does (see :func:`runs_own_steps`), whose only
    observation entry is one ``Box`` or ``MultiBinary`` array (no pixels, no ``Dict``
    observation, no info entries) and whose action is one ``Box``, ``Discrete``,
    ``MultiDiscrete`` or ``MultiBinary`` space, on the CPU, in any autoreset mode but
    ``SAME_STEP``.
    """
    from gymnasium import spaces

    return runs_own_steps(wrapper) and not (
        wrapper.from_pixels
        or wrapper.autoreset_mode == "SameStep"
        or (wrapper.device is not None and wrapper.device.type != "cpu")
        or wrapper.info_dict_reader
        or not isinstance(wrapper.single_observation_space, spaces.Box | spaces.MultiBinary)
        or list(wrapper.observation_spec.keys()) != [OBSERVATION]
        or isinstance(wrapper.action_spec, Composite)
        or not isinstance(
            wrapper.single_action_space,
            spaces.Box | spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary,
        )
    )


def numpy_stepper(wrapper: Any) -> Any:
    """The stepper of a wrapper's gymnasium env, for paths that step it on numpy rows.

    Returns it (a ``GymNumpyStepper``) where those paths give what ``step``/``reset`` give
    (see :func:`numpy_rows_apply`: one array observation, no pixels or info entries, outputs
    on the CPU, not ``SAME_STEP``, and a class that does not override the step or reset
    methods); ``None`` elsewhere, other envs included.

    Examples:
        >>> from rl_envs.libs import GymEnv
        >>> numpy_stepper(GymEnv("CartPole-v1")) is not None
        True
    """
    return wrapper._stepper if numpy_rows_apply(wrapper) else None


__all__ = [
    "GymParts",
    "GymPlanEnv",
    "gym_parts",
    "numpy_rows_apply",
    "numpy_stepper",
    "register_gym_parts",
    "runs_own_steps",
]
