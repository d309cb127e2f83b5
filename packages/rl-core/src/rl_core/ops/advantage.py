"""Return and advantage estimates over trajectories: GAE, TD(lambda), TD(0).

The functions take tensors shaped ``[*B, T, F]`` (time at ``time_dim``, any batch and
feature dims around it) with bool ``done`` and ``terminated`` flags of the same shape:

- ``terminated[t]``: the episode ended at step ``t`` in a terminal state, so
  ``next_state_value[t]`` is not bootstrapped from.
- ``done[t]``: the episode ended at step ``t`` for any reason (termination or truncation),
  so the trace does not run into step ``t + 1``, which belongs to another episode.
  ``terminated=None`` means ``terminated = done`` (every end is terminal).

GAE and TD(lambda) call the ``rl_core`` ops, so a kernel registered by ``rl-kernels`` runs
them when installed; they are differentiable with respect to values and rewards.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rl_core.ops import _checks, _library  # noqa: F401  (_library registers the ops)
from rl_core.ops.kernel_packages import ensure_kernel_packages

__all__ = [
    "generalized_advantage_estimate",
    "td_lambda_return_estimate",
    "td0_return_estimate",
]


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
    """Generalized advantage estimate (Schulman et al., 2016) and its value target.

    ``delta[t] = reward[t] + gamma * (1 - terminated[t]) * next_state_value[t] -
    state_value[t]``, ``advantage[t] = delta[t] + gamma * lmbda * (1 - done[t]) *
    advantage[t + 1]`` (zero after the last step), ``value_target = advantage +
    state_value``. Runs ``torch.ops.rl_core.generalized_advantage_estimate``.

    Args:
        gamma: discount factor in ``[0, 1]`` (float or one-element tensor).
        lmbda: trace-decay parameter in ``[0, 1]`` (float or one-element tensor).
        state_value: ``[*B, T, F]`` values of the states acted in.
        next_state_value: ``[*B, T, F]`` values of the states landed in.
        reward: ``[*B, T, F]`` rewards.
        done: ``[*B, T, F]`` bool, True where an episode ends; cuts the trace.
        terminated: ``[*B, T, F]`` bool, True where an episode ends in a terminal state; cuts
            bootstrapping. Defaults to ``done``.

    Keyword Args:
        time_dim: the time dimension. Defaults to -2.

    Returns:
        ``(advantage, value_target)``, both shaped like ``reward``, in the promoted dtype of
        the float inputs.

    Raises:
        ValueError: shapes or devices differ, ``time_dim`` is out of range, or ``gamma`` or
            ``lmbda`` is outside ``[0, 1]``.
        TypeError: ``done``/``terminated`` is not bool, or a value/reward is not floating
            point, or ``gamma``/``lmbda`` is not a scalar.

    Examples:
        >>> import torch
        >>> from rl_core.ops import generalized_advantage_estimate
        >>> reward = torch.ones(1, 3, 1)
        >>> value = torch.zeros(1, 3, 1)
        >>> done = torch.tensor([False, True, False]).view(1, 3, 1)
        >>> adv, target = generalized_advantage_estimate(0.5, 1.0, value, value, reward, done)
        >>> adv.shape
        torch.Size([1, 3, 1])
        >>> adv.flatten().tolist()
        [1.5, 1.0, 1.0]
    """
    where = "generalized_advantage_estimate"
    gamma = _checks.unit_interval(where, "gamma", gamma)
    lmbda = _checks.unit_interval(where, "lmbda", lmbda)
    terminated = done if terminated is None else terminated
    (state_value, next_state_value, reward), (done, terminated), restore = _checks.to_kernel_layout(
        where,
        {"state_value": state_value, "next_state_value": next_state_value, "reward": reward},
        {"done": done, "terminated": terminated},
        time_dim,
    )
    ensure_kernel_packages()
    advantage, value_target = torch.ops.rl_core.generalized_advantage_estimate(
        gamma, lmbda, state_value, next_state_value, reward, done, terminated
    )
    return restore(advantage), restore(value_target)


def td_lambda_return_estimate(
    gamma: float | Tensor,
    lmbda: float | Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    *,
    time_dim: int = -2,
) -> Tensor:
    """TD(lambda) return: a lambda-weighted mix of n-step returns, as a value target.

    ``G[t] = reward[t] + gamma * (1 - terminated[t]) * ((1 - l[t]) * next_state_value[t] +
    l[t] * G[t + 1])`` with ``l[t] = lmbda * (1 - done[t])``; the last step and every episode
    end bootstrap fully from ``next_state_value``. ``lmbda=0`` gives TD(0), ``lmbda=1`` the
    discounted return bootstrapped at the end of the sequence. Runs
    ``torch.ops.rl_core.td_lambda_return_estimate``.

    Args:
        gamma: discount factor in ``[0, 1]`` (float or one-element tensor).
        lmbda: mixing parameter in ``[0, 1]`` (float or one-element tensor).
        next_state_value: ``[*B, T, F]`` values of the states landed in.
        reward: ``[*B, T, F]`` rewards.
        done: ``[*B, T, F]`` bool, True where an episode ends.
        terminated: ``[*B, T, F]`` bool, True where an episode ends in a terminal state.
            Defaults to ``done``.

    Keyword Args:
        time_dim: the time dimension. Defaults to -2.

    Returns:
        The value target, shaped like ``reward``.

    Raises:
        ValueError: shapes or devices differ, ``time_dim`` is out of range, or ``gamma`` or
            ``lmbda`` is outside ``[0, 1]``.
        TypeError: ``done``/``terminated`` is not bool, or a value/reward is not floating
            point, or ``gamma``/``lmbda`` is not a scalar.

    Examples:
        >>> import torch
        >>> from rl_core.ops import td_lambda_return_estimate
        >>> reward = torch.ones(2, 1)
        >>> next_value = torch.full((2, 1), 4.0)
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> td_lambda_return_estimate(0.5, 1.0, next_value, reward, done).flatten().tolist()
        [2.5, 3.0]
    """
    where = "td_lambda_return_estimate"
    gamma = _checks.unit_interval(where, "gamma", gamma)
    lmbda = _checks.unit_interval(where, "lmbda", lmbda)
    terminated = done if terminated is None else terminated
    (next_state_value, reward), (done, terminated), restore = _checks.to_kernel_layout(
        where,
        {"next_state_value": next_state_value, "reward": reward},
        {"done": done, "terminated": terminated},
        time_dim,
    )
    ensure_kernel_packages()
    target = torch.ops.rl_core.td_lambda_return_estimate(
        gamma, lmbda, next_state_value, reward, done, terminated
    )
    return restore(target)


def td0_return_estimate(
    gamma: float | Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    terminated: Tensor,
) -> Tensor:
    """One-step TD target ``reward + gamma * (1 - terminated) * next_state_value``.

    Elementwise, so there is no op behind it and no time dimension to name: any shape works
    as long as the three tensors match.

    Args:
        gamma: discount factor in ``[0, 1]`` (float or one-element tensor).
        next_state_value: values of the states landed in.
        reward: rewards, same shape.
        terminated: bool, same shape, True where the episode ended in a terminal state.

    Returns:
        The value target, shaped like ``reward``.

    Raises:
        ValueError: shapes or devices differ, or ``gamma`` is outside ``[0, 1]``.
        TypeError: ``terminated`` is not bool, or a value/reward is not floating point.

    Examples:
        >>> import torch
        >>> from rl_core.ops import td0_return_estimate
        >>> terminated = torch.tensor([[False], [True]])
        >>> td0_return_estimate(0.5, torch.full((2, 1), 4.0), torch.ones(2, 1), terminated)
        tensor([[3.],
                [1.]])
    """
    where = "td0_return_estimate"
    gamma = _checks.unit_interval(where, "gamma", gamma)
    if next_state_value.dim() == 0:
        raise ValueError(
            f"{where}: expected next_state_value with at least one dimension, got a 0-dim "
            f"tensor. Use next_state_value.reshape(1)."
        )
    (next_state_value, reward), (terminated,), restore = _checks.to_kernel_layout(
        where,
        {"next_state_value": next_state_value, "reward": reward},
        {"terminated": terminated},
        0,
    )
    return restore(reward + gamma * (~terminated).to(reward.dtype) * next_state_value)
