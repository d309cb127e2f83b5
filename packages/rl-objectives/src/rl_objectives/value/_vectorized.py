"""Loop-free versions of GAE, TD(lambda) and TD(1): one batched matrix product over time.

Each estimate is a linear recursion ``y[t] = c[t] + a[t] * y[t + 1]`` whose coefficient
``a[t]`` is either a constant ``g`` (``gamma * lmbda``) or ``0`` (an episode end, a terminal
step, or the last step). Its solution is ``y[t] = sum_{k >= t} g ** (k - t) * c[k]`` over
the ``k`` reached before the next zero coefficient, i.e. ``y = W @ c`` with
``W[t, k] = g ** (k - t)`` when ``k >= t`` and no zero lies in ``a[t:k]``, else 0. ``W`` is
built per sequence from a running count of the zeros, so the cost is ``O(T**2)`` per
sequence: these variants suit short sequences on parallel hardware; on a CPU the looped
functions (or a compiled kernel from rl-kernels) are usually faster for long ``T``.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "vec_generalized_advantage_estimate",
    "vec_td_lambda_return_estimate",
    "vec_td1_return_estimate",
]

# Bound on the elements of one batch of W matrices (chunks of sequences).
_MAX_W_ELEMENTS = 1 << 23


def _scalar(where: str, name: str, value: float | Tensor) -> float:
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise TypeError(
                f"{where}: expected {name} to be a float or a 0-dim tensor, got shape "
                f"{tuple(value.shape)}."
            )
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{where}: expected {name} to be a float, got {type(value).__name__}.")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{where}: expected {name} in [0, 1], got {value}.")
    return float(value)


def _check(where: str, time_dim: int, floats: dict[str, Tensor], masks: dict[str, Tensor]) -> int:
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
    return time_dim % first.dim()


def _to_rows(x: Tensor, time_dim: int) -> Tensor:
    """``[..., T at time_dim, ...]`` -> ``[N, T]``."""
    return x.movedim(time_dim, -1).reshape(-1, x.shape[time_dim])


def _from_rows(rows: Tensor, like: Tensor, time_dim: int) -> Tensor:
    moved_shape = like.movedim(time_dim, -1).shape
    return rows.reshape(moved_shape).movedim(-1, time_dim)


def _discounted_scan(g: float, coeff: Tensor, cut: Tensor) -> Tensor:
    """Solves ``y[t] = coeff[t] + g * (1 - cut[t]) * y[t + 1]`` for ``[N, T]`` rows at once."""
    n, steps = coeff.shape
    if steps == 0 or n == 0:
        return coeff.clone()
    # segment[k]: the number of cuts strictly before k; k is reached from t iff equal.
    segment = torch.cumsum(cut.to(torch.int64), dim=-1) - cut.to(torch.int64)
    index = torch.arange(steps, device=coeff.device)
    lag = index.view(1, -1) - index.view(-1, 1)  # lag[t, k] = k - t
    powers = torch.pow(
        torch.tensor(g, dtype=coeff.dtype, device=coeff.device), lag.clamp(min=0).to(coeff.dtype)
    ) * (lag >= 0).to(coeff.dtype)
    out = torch.empty_like(coeff)
    chunk = max(1, _MAX_W_ELEMENTS // (steps * steps))
    for start in range(0, n, chunk):
        seg = segment[start : start + chunk]
        same = (seg.unsqueeze(-1) == seg.unsqueeze(-2)).to(coeff.dtype)  # [n, t, k]
        weights = powers * same
        out[start : start + chunk] = (weights @ coeff[start : start + chunk].unsqueeze(-1)).squeeze(
            -1
        )
    return out


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
    """GAE without a loop over time; same arguments and results as
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
    dim = _check(
        where,
        time_dim,
        {"state_value": state_value, "next_state_value": next_state_value, "reward": reward},
        {"done": done, "terminated": terminated},
    )
    bootstrap = gamma * (~terminated).to(reward.dtype)
    delta = reward + bootstrap * next_state_value - state_value
    rows = _to_rows(delta, dim)
    cut = _to_rows(done, dim).clone()
    if cut.shape[-1]:
        cut[:, -1] = True
    advantage = _from_rows(_discounted_scan(gamma * lmbda, rows, cut), delta, dim)
    return advantage, advantage + state_value


def vec_td_lambda_return_estimate(
    gamma: float | Tensor,
    lmbda: float | Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    *,
    time_dim: int = -2,
) -> Tensor:
    """TD(lambda) return without a loop over time; same arguments and results as
    :func:`~rl_objectives.value.functional.td_lambda_return_estimate`.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import vec_td_lambda_return_estimate
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> vec_td_lambda_return_estimate(0.5, 1.0, torch.full((2, 1), 4.0), torch.ones(2, 1), done).flatten()
        tensor([2.5000, 3.0000])
    """
    where = "vec_td_lambda_return_estimate"
    gamma = _scalar(where, "gamma", gamma)
    lmbda = _scalar(where, "lmbda", lmbda)
    terminated = done if terminated is None else terminated
    dim = _check(
        where,
        time_dim,
        {"next_state_value": next_state_value, "reward": reward},
        {"done": done, "terminated": terminated},
    )
    # G[t] = c[t] + a[t] G[t+1], a[t] = gamma * lmbda where the trace goes on, else 0.
    cut = _to_rows(done | terminated, dim).clone()
    if cut.shape[-1]:
        cut[:, -1] = True
    bootstrap = gamma * (~terminated).to(reward.dtype)
    mix = lmbda * (~_from_rows(cut, done, dim)).to(reward.dtype)
    coeff = reward + bootstrap * (1 - mix) * next_state_value
    if lmbda == 0.0:
        return coeff
    target = _discounted_scan(gamma * lmbda, _to_rows(coeff, dim), cut)
    return _from_rows(target, reward, dim)


def vec_td1_return_estimate(
    gamma: float | Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    *,
    time_dim: int = -2,
) -> Tensor:
    """TD(1) return without a loop over time: :func:`vec_td_lambda_return_estimate` with
    ``lmbda=1``.

    Examples:
        >>> import torch
        >>> from rl_objectives.value.functional import vec_td1_return_estimate
        >>> done = torch.zeros(3, 1, dtype=torch.bool)
        >>> vec_td1_return_estimate(0.5, torch.zeros(3, 1), torch.ones(3, 1), done).flatten()
        tensor([1.7500, 1.5000, 1.0000])
    """
    return vec_td_lambda_return_estimate(
        gamma, 1.0, next_state_value, reward, done, terminated, time_dim=time_dim
    )
