"""V-trace (Espeholt et al., 2018): off-policy value targets and advantages."""

from __future__ import annotations

import torch
from torch import Tensor

from rl_core.ops import _checks, _library  # noqa: F401  (_library registers the ops)
from rl_core.ops.kernel_packages import ensure_kernel_packages

__all__ = ["vtrace_advantage_estimate"]


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
    """V-trace value target and policy-gradient advantage of off-policy trajectories.

    With ``ratio = exp(log_pi - log_mu)``, ``rho = min(rho_thresh, ratio)``,
    ``c = min(c_thresh, ratio)``, ``b = gamma * (1 - terminated)``:

    - correction: ``d[t] = rho[t] * (reward[t] + b[t] * next_state_value[t] - state_value[t])
      + gamma * c[t] * (1 - done[t]) * d[t + 1]``, zero after the last step;
    - value target: ``v = state_value + d``;
    - advantage: ``rho[t] * (reward[t] + b[t] * v_next[t] - state_value[t])`` where the
      next-state target ``v_next[t]`` is ``v[t + 1] = state_value[t + 1] + d[t + 1]`` inside
      an episode (IMPALA's ``v_{s+1}``), and ``next_state_value[t]`` where ``done[t]`` and at
      the last step (TorchRL's choice at the last step; at a truncation inside the data,
      TorchRL takes ``v[t + 1]`` of the next episode, this takes the truncated episode's own
      bootstrap value).

    ``terminated`` cuts bootstrapping, ``done`` cuts the trace (``terminated=None`` means
    ``terminated = done``). Gradients flow to the values and rewards; the importance weights
    are constants (no gradient to ``log_pi`` or ``log_mu``), as in IMPALA. Runs
    ``torch.ops.rl_core.vtrace_advantage_estimate``.

    Args:
        gamma: discount factor in ``[0, 1]`` (float or one-element tensor).
        log_pi: ``[*B, T, F]`` log-probabilities of the taken actions under the learner policy.
        log_mu: ``[*B, T, F]`` log-probabilities under the behaviour policy that acted.
        state_value: ``[*B, T, F]`` values of the states acted in.
        next_state_value: ``[*B, T, F]`` values of the states landed in.
        reward: ``[*B, T, F]`` rewards.
        done: ``[*B, T, F]`` bool, True where an episode ends.
        terminated: ``[*B, T, F]`` bool, True where an episode ends in a terminal state.
            Defaults to ``done``.

    Keyword Args:
        rho_thresh: clipping threshold of the importance weights (``rho-bar``), > 0.
            Defaults to 1.0.
        c_thresh: clipping threshold of the trace coefficients (``c-bar``), > 0.
            Defaults to 1.0.
        time_dim: the time dimension. Defaults to -2.

    Returns:
        ``(advantage, value_target)``, both shaped like ``reward``.

    Raises:
        ValueError: shapes or devices differ, ``time_dim`` is out of range, ``gamma`` is
            outside ``[0, 1]`` or a threshold is not positive.
        TypeError: ``done``/``terminated`` is not bool, a float input is not floating point,
            or a scalar argument is not a scalar.

    Examples:
        >>> import torch
        >>> from rl_core.ops import vtrace_advantage_estimate
        >>> log_prob = torch.zeros(1, 2, 1)  # on-policy: all ratios are 1
        >>> value = torch.zeros(1, 2, 1)
        >>> reward = torch.ones(1, 2, 1)
        >>> done = torch.zeros(1, 2, 1, dtype=torch.bool)
        >>> adv, target = vtrace_advantage_estimate(
        ...     0.5, log_prob, log_prob, value, value, reward, done
        ... )
        >>> target.flatten().tolist(), adv.flatten().tolist()
        ([1.5, 1.0], [1.5, 1.0])
    """
    where = "vtrace_advantage_estimate"
    gamma = _checks.unit_interval(where, "gamma", gamma)
    rho_thresh = _checks.positive(where, "rho_thresh", rho_thresh)
    c_thresh = _checks.positive(where, "c_thresh", c_thresh)
    terminated = done if terminated is None else terminated
    floats, (done, terminated), restore = _checks.to_kernel_layout(
        where,
        {
            "log_pi": log_pi,
            "log_mu": log_mu,
            "state_value": state_value,
            "next_state_value": next_state_value,
            "reward": reward,
        },
        {"done": done, "terminated": terminated},
        time_dim,
    )
    log_pi, log_mu, state_value, next_state_value, reward = floats
    ensure_kernel_packages()
    advantage, value_target = torch.ops.rl_core.vtrace_advantage_estimate(
        gamma,
        rho_thresh,
        c_thresh,
        log_pi,
        log_mu,
        state_value,
        next_state_value,
        reward,
        done,
        terminated,
    )
    return restore(advantage), restore(value_target)
