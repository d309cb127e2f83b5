"""Return and advantage estimates as pure tensor functions, under TorchRL's names.

Each estimator is defined once, as an ``rl_core.ops`` op (its math in
:mod:`rl_core.ops.reference`, its checks, shapes and docstring in the op's public wrapper;
a compiled kernel registered by ``rl-kernels`` runs it with no code change). This module
gives TorchRL's names and argument conventions to those ops and defines no estimator of its
own:

- :func:`generalized_advantage_estimate`, :func:`vtrace_advantage_estimate` and
  :func:`td0_return_estimate` *are* the ops' wrappers (the same functions).
- :func:`td_lambda_return_estimate` adds TorchRL's ``rolling_gamma`` argument to the op;
  :func:`td1_return_estimate` is it with ``lmbda=1``; the ``*_advantage_estimate`` functions
  subtract ``state_value`` from their return.
- The ``vec_*`` names (TorchRL's fast paths) are the functions above with the same
  signature and docstring: ``vec_generalized_advantage_estimate`` is
  :func:`generalized_advantage_estimate`; the TD(lambda) and TD(1) ones differ from their
  twins only where TorchRL's do: they accept ``rolling_gamma=False`` with a scalar gamma
  (and ignore it), which the looped ones refuse with a ``RuntimeError``.

Tensors are shaped ``[*B, T, F]`` with time at ``time_dim`` (default -2), with bool
``done``/``terminated`` flags of the same shape: ``terminated[t]`` stops bootstrapping from
``next_state_value[t]``, ``done[t]`` stops the trace from running into step ``t + 1``, and
``terminated=None`` means every end is terminal. A truncated step (``done`` without
``terminated``) therefore bootstraps and cuts the trace.

``rolling_gamma`` (TD(1) and TD(lambda), as in TorchRL 0.14) says how a per-step gamma
tensor is read. gamma is a scalar here, for which both readings give the same returns.

Examples:
    >>> import torch
    >>> from rl_objectives.value.functional import generalized_advantage_estimate
    >>> reward = torch.ones(2, 5, 1)  # [batch, time, feature]
    >>> value = torch.zeros(2, 5, 1)
    >>> done = torch.zeros(2, 5, 1, dtype=torch.bool)
    >>> adv, target = generalized_advantage_estimate(0.9, 0.95, value, value, reward, done)
    >>> adv.shape, round(adv[0, -1, 0].item(), 3)
    (torch.Size([2, 5, 1]), 1.0)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TypeVar

from torch import Tensor

import rl_core.ops as _ops
from rl_core.ops import (
    generalized_advantage_estimate,
    td0_return_estimate,
    vtrace_advantage_estimate,
)

__all__ = [
    "td0_return_estimate",
    "td0_advantage_estimate",
    "td1_return_estimate",
    "td1_advantage_estimate",
    "td_lambda_return_estimate",
    "td_lambda_advantage_estimate",
    "generalized_advantage_estimate",
    "vtrace_advantage_estimate",
    "vec_generalized_advantage_estimate",
    "vec_td_lambda_return_estimate",
    "vec_td_lambda_advantage_estimate",
    "vec_td1_return_estimate",
    "vec_td1_advantage_estimate",
]

_Fn = TypeVar("_Fn", bound=Callable[..., Tensor])


def _check_rolling_gamma(where: str, rolling_gamma: object) -> None:
    """TorchRL's looped TD(1)/TD(lambda): ``rolling_gamma`` None or True with a scalar gamma."""
    if rolling_gamma is not None and not isinstance(rolling_gamma, bool):
        raise TypeError(
            f"{where}: expected rolling_gamma to be None, True or False, got "
            f"{type(rolling_gamma).__name__}."
        )
    if rolling_gamma is False:
        raise RuntimeError(
            f"{where}: rolling_gamma=False is meant for per-step gamma tensors, and gamma is a "
            f"scalar here (both readings give the same returns). Leave rolling_gamma as None "
            f"or True, or call vec_{where}, which ignores it as TorchRL's does."
        )


def _check_state_value(where: str, state_value: Tensor, reward: Tensor) -> None:
    """``state_value`` of an advantage: a float tensor shaped like ``reward``, on its device."""
    if not isinstance(state_value, Tensor):
        raise TypeError(
            f"{where}: expected state_value to be a tensor, got {type(state_value).__name__}."
        )
    if state_value.shape != reward.shape:
        raise ValueError(
            f"{where}: expected state_value of shape {tuple(reward.shape)} like reward, got "
            f"{tuple(state_value.shape)}."
        )
    if state_value.device != reward.device:
        raise ValueError(
            f"{where}: expected state_value on {reward.device} like reward, got "
            f"{state_value.device}."
        )
    if not state_value.is_floating_point():
        raise TypeError(
            f"{where}: expected state_value to be a floating-point tensor, got "
            f"{state_value.dtype}. Convert it with state_value.float()."
        )


def td0_advantage_estimate(
    gamma: float | Tensor,
    state_value: Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    terminated: Tensor,
) -> Tensor:
    """:func:`td0_return_estimate` minus ``state_value``.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import td0_advantage_estimate
        >>> term = torch.zeros(1, 1, dtype=torch.bool)
        >>> td0_advantage_estimate(0.5, torch.ones(1, 1), torch.full((1, 1), 2.0), torch.ones(1, 1), term)
        tensor([[1.]])
    """
    _check_state_value("td0_advantage_estimate", state_value, reward)
    return td0_return_estimate(gamma, next_state_value, reward, terminated) - state_value


def td_lambda_return_estimate(
    gamma: float | Tensor,
    lmbda: float | Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
) -> Tensor:
    """:func:`rl_core.ops.td_lambda_return_estimate` (see it for the equation, arguments,
    shapes and errors) with TorchRL's ``rolling_gamma``: None or True; ``False`` raises a
    ``RuntimeError`` (gamma is a scalar) in the looped functions and is ignored by the
    ``vec_*`` ones, as in TorchRL.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import td_lambda_return_estimate
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> td_lambda_return_estimate(0.5, 0.0, torch.full((2, 1), 2.0), torch.ones(2, 1), done).flatten()
        tensor([2., 2.])
    """
    _check_rolling_gamma("td_lambda_return_estimate", rolling_gamma)
    return _ops.td_lambda_return_estimate(
        gamma, lmbda, next_state_value, reward, done, terminated, time_dim=time_dim
    )


def td_lambda_advantage_estimate(
    gamma: float | Tensor,
    lmbda: float | Tensor,
    state_value: Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
) -> Tensor:
    """:func:`td_lambda_return_estimate` minus ``state_value``.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import td_lambda_advantage_estimate
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> v = torch.ones(2, 1)
        >>> td_lambda_advantage_estimate(0.5, 0.5, v, v, torch.ones(2, 1), done).flatten()
        tensor([0.6250, 0.5000])
    """
    _check_rolling_gamma("td_lambda_advantage_estimate", rolling_gamma)
    _check_state_value("td_lambda_advantage_estimate", state_value, reward)
    target = _ops.td_lambda_return_estimate(
        gamma, lmbda, next_state_value, reward, done, terminated, time_dim=time_dim
    )
    return target - state_value


def td1_return_estimate(
    gamma: float | Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
) -> Tensor:
    """Discounted return to each episode's end, bootstrapped where the data stops:
    :func:`td_lambda_return_estimate` with ``lmbda=1``.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import td1_return_estimate
        >>> done = torch.zeros(3, 1, dtype=torch.bool)
        >>> td1_return_estimate(0.5, torch.zeros(3, 1), torch.ones(3, 1), done).flatten()
        tensor([1.7500, 1.5000, 1.0000])
    """
    _check_rolling_gamma("td1_return_estimate", rolling_gamma)
    return _ops.td_lambda_return_estimate(
        gamma, 1.0, next_state_value, reward, done, terminated, time_dim=time_dim
    )


def td1_advantage_estimate(
    gamma: float | Tensor,
    state_value: Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
) -> Tensor:
    """:func:`td1_return_estimate` minus ``state_value`` (Monte-Carlo advantage).

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import td1_advantage_estimate
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> td1_advantage_estimate(1.0, torch.ones(2, 1), torch.zeros(2, 1), torch.ones(2, 1), done).flatten()
        tensor([1., 0.])
    """
    _check_rolling_gamma("td1_advantage_estimate", rolling_gamma)
    _check_state_value("td1_advantage_estimate", state_value, reward)
    target = _ops.td_lambda_return_estimate(
        gamma, 1.0, next_state_value, reward, done, terminated, time_dim=time_dim
    )
    return target - state_value


def _vec_twin(looped: _Fn) -> _Fn:
    """TorchRL's ``vec_`` name for ``looped``: the same signature, docstring and op; only
    ``rolling_gamma=False`` is accepted and ignored (gamma is a scalar), as TorchRL's
    ``vec_`` functions do."""
    position = list(inspect.signature(looped).parameters).index("rolling_gamma")

    @functools.wraps(looped)
    def twin(*args: object, **kwargs: object) -> Tensor:
        if len(args) > position and args[position] is False:
            args = (*args[:position], None, *args[position + 1 :])
        elif kwargs.get("rolling_gamma") is False:
            kwargs["rolling_gamma"] = None
        return looped(*args, **kwargs)

    twin.__name__ = twin.__qualname__ = f"vec_{looped.__name__}"
    return twin  # type: ignore[return-value]


vec_generalized_advantage_estimate = generalized_advantage_estimate
vec_td_lambda_return_estimate = _vec_twin(td_lambda_return_estimate)
vec_td_lambda_advantage_estimate = _vec_twin(td_lambda_advantage_estimate)
vec_td1_return_estimate = _vec_twin(td1_return_estimate)
vec_td1_advantage_estimate = _vec_twin(td1_advantage_estimate)
