"""TorchRL's ``vec_*`` value functions, run by the same ``rl_core`` ops as the looped ones.

TorchRL offers a ``vec_`` twin of GAE, TD(lambda) and TD(1) as its fast path (a convolution
over time instead of a Python loop). Here the looped functions already run one
``rl_core.ops`` op (a compiled O(T) scan when rl-kernels is installed, differentiable either
way), so each ``vec_`` function checks its inputs under its own name and calls that op: the
same results, gradients and speed as its looped twin, for every ``T`` including ``T = 0``.

``rolling_gamma`` is accepted where TorchRL 0.14's ``vec_`` functions take it. It decides how a
per-step gamma tensor is read; gamma is a scalar here, for which both readings give the same
returns, and TorchRL's ``vec_`` functions ignore it for scalars too.
"""

from __future__ import annotations

import torch
from torch import Tensor

import rl_core.ops as _ops

__all__ = [
    "vec_generalized_advantage_estimate",
    "vec_td_lambda_return_estimate",
    "vec_td_lambda_advantage_estimate",
    "vec_td1_return_estimate",
    "vec_td1_advantage_estimate",
]


def _scalar(where: str, name: str, value: float | Tensor) -> float:
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise TypeError(
                f"{where}: expected {name} to be a float or a one-element tensor, got shape "
                f"{tuple(value.shape)}. Per-step gamma/lmbda tensors are not supported: pass "
                f"a scalar."
            )
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{where}: expected {name} to be a float, got {type(value).__name__}.")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{where}: expected {name} in [0, 1], got {value}.")
    return float(value)


def check_rolling_gamma(where: str, rolling_gamma: object) -> None:
    """``rolling_gamma`` must be None, True or False (TorchRL's values)."""
    if rolling_gamma is not None and not isinstance(rolling_gamma, bool):
        raise TypeError(
            f"{where}: expected rolling_gamma to be None, True or False, got "
            f"{type(rolling_gamma).__name__}."
        )


def _check(where: str, time_dim: int, floats: dict[str, Tensor], masks: dict[str, Tensor]) -> None:
    first_name, first = next(iter(floats.items()))
    shape = first.shape
    for name, tensor in (*floats.items(), *masks.items()):
        if tensor.shape != shape:
            raise ValueError(
                f"{where}: expected {name} of shape {tuple(shape)} (the shape of {first_name}), "
                f"got {tuple(tensor.shape)}."
            )
    for name, tensor in floats.items():
        if not tensor.is_floating_point():
            raise TypeError(f"{where}: expected {name} to be floating point, got {tensor.dtype}.")
    for name, tensor in masks.items():
        if tensor.dtype != torch.bool:
            raise TypeError(f"{where}: expected {name} to be bool, got {tensor.dtype}.")
    if not -first.dim() <= time_dim < first.dim():
        raise ValueError(
            f"{where}: time_dim={time_dim} is out of range for inputs with {first.dim()} dims."
        )


def _lambda_return(
    where: str,
    gamma: float | Tensor,
    lmbda: float | Tensor,
    state_value: Tensor | None,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None,
    rolling_gamma: bool | None,
    time_dim: int,
) -> Tensor:
    """The lambda-return (minus ``state_value`` when given), checked under ``where``."""
    gamma = _scalar(where, "gamma", gamma)
    lmbda = _scalar(where, "lmbda", lmbda)
    check_rolling_gamma(where, rolling_gamma)
    terminated = done if terminated is None else terminated
    floats = {"next_state_value": next_state_value, "reward": reward}
    if state_value is not None:
        floats = {"state_value": state_value, **floats}
    _check(where, time_dim, floats, {"done": done, "terminated": terminated})
    target = _ops.td_lambda_return_estimate(
        gamma, lmbda, next_state_value, reward, done, terminated, time_dim=time_dim
    )
    return target if state_value is None else target - state_value


def vec_generalized_advantage_estimate(
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
    """TorchRL's name for GAE's fast path; same arguments, results and op as
    :func:`~rl_objectives.value.functional.generalized_advantage_estimate`.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import vec_generalized_advantage_estimate
        >>> done = torch.tensor([[False], [True], [False]])
        >>> adv, _ = vec_generalized_advantage_estimate(
        ...     0.5, 1.0, torch.zeros(3, 1), torch.zeros(3, 1), torch.ones(3, 1), done
        ... )
        >>> adv.flatten().tolist()
        [1.5, 1.0, 1.0]
    """
    where = "vec_generalized_advantage_estimate"
    gamma = _scalar(where, "gamma", gamma)
    lmbda = _scalar(where, "lmbda", lmbda)
    terminated = done if terminated is None else terminated
    _check(
        where,
        time_dim,
        {"state_value": state_value, "next_state_value": next_state_value, "reward": reward},
        {"done": done, "terminated": terminated},
    )
    return _ops.generalized_advantage_estimate(
        gamma, lmbda, state_value, next_state_value, reward, done, terminated, time_dim=time_dim
    )


def vec_td_lambda_return_estimate(
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
    """TorchRL's name for TD(lambda)'s fast path; same results and op as
    :func:`~rl_objectives.value.functional.td_lambda_return_estimate`.

    ``rolling_gamma`` is accepted and, gamma being a scalar, changes nothing (as in TorchRL).

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import vec_td_lambda_return_estimate
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> vec_td_lambda_return_estimate(0.5, 1.0, torch.full((2, 1), 4.0), torch.ones(2, 1), done).flatten()
        tensor([2.5000, 3.0000])
    """
    return _lambda_return(
        "vec_td_lambda_return_estimate",
        gamma,
        lmbda,
        None,
        next_state_value,
        reward,
        done,
        terminated,
        rolling_gamma,
        time_dim,
    )


def vec_td_lambda_advantage_estimate(
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
    """:func:`vec_td_lambda_return_estimate` minus ``state_value``.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import vec_td_lambda_advantage_estimate
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> v = torch.ones(2, 1)
        >>> vec_td_lambda_advantage_estimate(0.5, 0.5, v, v, torch.ones(2, 1), done).flatten()
        tensor([0.6250, 0.5000])
    """
    return _lambda_return(
        "vec_td_lambda_advantage_estimate",
        gamma,
        lmbda,
        state_value,
        next_state_value,
        reward,
        done,
        terminated,
        rolling_gamma,
        time_dim,
    )


def vec_td1_return_estimate(
    gamma: float | Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
) -> Tensor:
    """TD(1) return: :func:`vec_td_lambda_return_estimate` with ``lmbda=1``.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import vec_td1_return_estimate
        >>> done = torch.zeros(3, 1, dtype=torch.bool)
        >>> vec_td1_return_estimate(0.5, torch.zeros(3, 1), torch.ones(3, 1), done).flatten()
        tensor([1.7500, 1.5000, 1.0000])
    """
    return _lambda_return(
        "vec_td1_return_estimate",
        gamma,
        1.0,
        None,
        next_state_value,
        reward,
        done,
        terminated,
        rolling_gamma,
        time_dim,
    )


def vec_td1_advantage_estimate(
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
    """:func:`vec_td1_return_estimate` minus ``state_value``.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import vec_td1_advantage_estimate
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> vec_td1_advantage_estimate(1.0, torch.ones(2, 1), torch.zeros(2, 1), torch.ones(2, 1), done).flatten()
        tensor([1., 0.])
    """
    return _lambda_return(
        "vec_td1_advantage_estimate",
        gamma,
        1.0,
        state_value,
        next_state_value,
        reward,
        done,
        terminated,
        rolling_gamma,
        time_dim,
    )
