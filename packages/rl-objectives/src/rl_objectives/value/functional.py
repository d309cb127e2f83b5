"""Return and advantage estimates as pure tensor functions.

Every function takes tensors shaped ``[*B, T, F]`` with time at ``time_dim`` (default -2) and
bool ``done``/``terminated`` flags of the same shape:

- ``terminated[t]``: the episode ended at step ``t`` in a terminal state, so
  ``next_state_value[t]`` is not bootstrapped from.
- ``done[t]``: the episode ended at step ``t`` for any reason (termination or truncation),
  so no trace runs from step ``t + 1`` (another episode) back into step ``t``.
  ``terminated=None`` means every end is terminal (``terminated = done``).

A truncated step (``done`` without ``terminated``) therefore bootstraps from
``next_state_value`` and cuts the trace there. GAE, TD(lambda), TD(1) and V-trace run the
``rl_core.ops`` ops, so a compiled kernel registered by ``rl-kernels`` runs them with no code
change. The ``vec_*`` variants are TorchRL's names for its fast paths; here they run the same
ops as their looped twins (see :mod:`rl_objectives.value._vectorized`).

``rolling_gamma`` (TD(1) and TD(lambda), as in TorchRL 0.14) says how a per-step gamma
tensor is read. gamma is a scalar here; the looped functions refuse ``rolling_gamma=False``
with a scalar gamma as TorchRL's do, the ``vec_*`` ones accept and ignore it as TorchRL's do.

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

from torch import Tensor

import rl_core.ops as _ops
from rl_objectives.value._vectorized import (
    check_rolling_gamma,
    vec_generalized_advantage_estimate,
    vec_td1_advantage_estimate,
    vec_td1_return_estimate,
    vec_td_lambda_advantage_estimate,
    vec_td_lambda_return_estimate,
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


def _looped_rolling_gamma(where: str, rolling_gamma: bool | None) -> None:
    """TorchRL's looped TD(1)/TD(lambda) refuse ``rolling_gamma=False`` for a scalar gamma."""
    check_rolling_gamma(where, rolling_gamma)
    if rolling_gamma is False:
        raise RuntimeError(
            f"{where}: rolling_gamma=False is meant for per-step gamma tensors, and gamma is a "
            f"scalar here (both readings give the same returns). Leave rolling_gamma as None "
            f"or True."
        )


def td0_return_estimate(
    gamma: float | Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    terminated: Tensor,
) -> Tensor:
    """One-step target ``reward + gamma * (1 - terminated) * next_state_value``.

    Elementwise: any shape, no time dimension.

    Args:
        gamma: discount factor in ``[0, 1]``.
        next_state_value: values of the states landed in.
        reward: rewards, same shape.
        terminated: bool, same shape.

    Returns:
        The value target, shaped like ``reward``.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import td0_return_estimate
        >>> term = torch.tensor([[False], [True]])
        >>> td0_return_estimate(0.5, torch.full((2, 1), 2.0), torch.ones(2, 1), term).flatten()
        tensor([2., 1.])
    """
    return _ops.td0_return_estimate(gamma, next_state_value, reward, terminated)


def td0_advantage_estimate(
    gamma: float | Tensor,
    state_value: Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    terminated: Tensor,
) -> Tensor:
    """One-step advantage: :func:`td0_return_estimate` minus ``state_value``.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import td0_advantage_estimate
        >>> term = torch.zeros(1, 1, dtype=torch.bool)
        >>> td0_advantage_estimate(0.5, torch.ones(1, 1), torch.full((1, 1), 2.0), torch.ones(1, 1), term)
        tensor([[1.]])
    """
    return td0_return_estimate(gamma, next_state_value, reward, terminated) - state_value


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
    """Discounted return to each episode's end, bootstrapped where the data stops: TD(lambda)
    with ``lmbda=1``, run by :func:`rl_core.ops.td_lambda_return_estimate` (see it for the
    equation, the arguments, shapes and errors).

    ``rolling_gamma`` is TorchRL's switch for per-step gamma tensors: None or True here, gamma
    being a scalar; ``False`` raises a ``RuntimeError`` as TorchRL does with a scalar gamma.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import td1_return_estimate
        >>> done = torch.zeros(3, 1, dtype=torch.bool)
        >>> td1_return_estimate(0.5, torch.zeros(3, 1), torch.ones(3, 1), done).flatten()
        tensor([1.7500, 1.5000, 1.0000])
    """
    _looped_rolling_gamma("td1_return_estimate", rolling_gamma)
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
    _looped_rolling_gamma("td1_advantage_estimate", rolling_gamma)
    target = td1_return_estimate(
        gamma, next_state_value, reward, done, terminated, time_dim=time_dim
    )
    return target - state_value


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
    """TD(lambda) return, run by :func:`rl_core.ops.td_lambda_return_estimate` (see it for the
    equation, the arguments, shapes and errors).

    ``rolling_gamma``: None or True, as for :func:`td1_return_estimate`.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import td_lambda_return_estimate
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> td_lambda_return_estimate(0.5, 0.0, torch.full((2, 1), 2.0), torch.ones(2, 1), done).flatten()
        tensor([2., 2.])
    """
    _looped_rolling_gamma("td_lambda_return_estimate", rolling_gamma)
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
    _looped_rolling_gamma("td_lambda_advantage_estimate", rolling_gamma)
    target = td_lambda_return_estimate(
        gamma, lmbda, next_state_value, reward, done, terminated, time_dim=time_dim
    )
    return target - state_value


def generalized_advantage_estimate(
    gamma: float | Tensor,
    lmbda: float | Tensor,
    state_value: Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    *,
    time_dim: int = -2,
) -> tuple[Tensor, Tensor]:
    """GAE advantage and value target, run by :func:`rl_core.ops.generalized_advantage_estimate`
    (see it for the equations, the arguments, shapes and errors).

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import generalized_advantage_estimate
        >>> done = torch.tensor([[False], [True], [False]])
        >>> adv, _ = generalized_advantage_estimate(
        ...     0.5, 1.0, torch.zeros(3, 1), torch.zeros(3, 1), torch.ones(3, 1), done
        ... )
        >>> adv.flatten().tolist()
        [1.5, 1.0, 1.0]
    """
    return _ops.generalized_advantage_estimate(
        gamma, lmbda, state_value, next_state_value, reward, done, terminated, time_dim=time_dim
    )


def vtrace_advantage_estimate(
    gamma: float | Tensor,
    log_pi: Tensor,
    log_mu: Tensor,
    state_value: Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    *,
    rho_thresh: float | Tensor = 1.0,
    c_thresh: float | Tensor = 1.0,
    time_dim: int = -2,
) -> tuple[Tensor, Tensor]:
    """V-trace advantage and value target (runs ``rl_core.ops.vtrace_advantage_estimate``).

    See :func:`rl_core.ops.vtrace_advantage_estimate` for the equations; the importance
    weights ``exp(log_pi - log_mu)`` are clipped at ``rho_thresh`` (deltas) and ``c_thresh``
    (traces) and carry no gradient.

    Returns:
        ``(advantage, value_target)``, shaped like ``reward``.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import vtrace_advantage_estimate
        >>> lp = torch.zeros(2, 1)
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> adv, target = vtrace_advantage_estimate(
        ...     1.0, lp, lp, torch.zeros(2, 1), torch.zeros(2, 1), torch.ones(2, 1), done
        ... )
        >>> target.flatten().tolist()
        [2.0, 1.0]
    """
    return _ops.vtrace_advantage_estimate(
        gamma,
        log_pi,
        log_mu,
        state_value,
        next_state_value,
        reward,
        done,
        terminated,
        rho_thresh=rho_thresh,
        c_thresh=c_thresh,
        time_dim=time_dim,
    )
