"""Backward formulas of the value ops, registered on their Autograd key.

GAE, TD(lambda) and V-trace are linear in the values and rewards (V-trace once its clipped
importance weights are fixed), so each gradient is a second scan, run forward in time:
``h[t] = e[t] + decay[t - 1] * h[t - 1]``. The formulas are pure torch and do not depend on
which kernel ran the forward pass, so a compiled kernel registered for CPU or CUDA keeps
autograd working. V-trace treats its importance weights as constants, as in IMPALA: no
gradient flows to ``log_pi`` or ``log_mu``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

_GradOut = tuple[Tensor | None, ...]


def _forward_scan(source: Tensor, decay: Tensor) -> Tensor:
    """``h[0] = source[0]``, ``h[t] = source[t] + decay[t - 1] * h[t - 1]`` over ``[T, N]``."""
    out = torch.empty_like(source)
    if source.shape[0] == 0:
        return out
    running = source[0]
    out[0] = running
    for t in range(1, source.shape[0]):
        running = source[t] + decay[t - 1] * running
        out[t] = running
    return out


def _or_zeros(grad: Tensor | None, like: Tensor) -> Tensor:
    return torch.zeros_like(like) if grad is None else grad


def gae_setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    gamma, lmbda, state_value, _, _, done, terminated = inputs
    ctx.gamma, ctx.lmbda = gamma, lmbda
    ctx.save_for_backward(state_value, done, terminated)


def gae_backward(ctx: Any, grad_advantage: Tensor | None, grad_target: Tensor | None) -> _GradOut:
    state_value, done, terminated = ctx.saved_tensors
    grad_advantage = _or_zeros(grad_advantage, state_value)
    grad_target = _or_zeros(grad_target, state_value)
    decay = (ctx.gamma * ctx.lmbda) * (~done).to(state_value.dtype)
    # value_target = advantage + state_value: the advantage receives both gradients.
    grad_delta = _forward_scan(grad_advantage + grad_target, decay)
    bootstrap = ctx.gamma * (~terminated).to(state_value.dtype)
    return None, None, grad_target - grad_delta, bootstrap * grad_delta, grad_delta, None, None


def td_lambda_setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    gamma, lmbda, _, _, done, terminated = inputs
    ctx.gamma, ctx.lmbda = gamma, lmbda
    ctx.save_for_backward(done, terminated)


def td_lambda_backward(ctx: Any, grad_target: Tensor) -> _GradOut:
    done, terminated = ctx.saved_tensors
    bootstrap = ctx.gamma * (~terminated).to(grad_target.dtype)
    mix = ctx.lmbda * (~done).to(grad_target.dtype)
    if mix.shape[0]:
        mix[-1] = 0.0  # the last step bootstraps fully from next_state_value
    grad_return = _forward_scan(grad_target, bootstrap * mix)
    return None, None, bootstrap * (1 - mix) * grad_return, grad_return, None, None


def vtrace_setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    gamma, rho_thresh, c_thresh, log_pi, log_mu, _, _, _, done, terminated = inputs
    ctx.gamma, ctx.rho_thresh, ctx.c_thresh = gamma, rho_thresh, c_thresh
    ctx.save_for_backward(log_pi, log_mu, done, terminated)


def vtrace_backward(
    ctx: Any, grad_advantage: Tensor | None, grad_target: Tensor | None
) -> _GradOut:
    log_pi, log_mu, done, terminated = ctx.saved_tensors
    grad_advantage = _or_zeros(grad_advantage, log_pi)
    grad_target = _or_zeros(grad_target, log_pi)
    ratio = (log_pi - log_mu).exp()
    rho = ratio.clamp(max=ctx.rho_thresh)
    not_done = (~done).to(log_pi.dtype)
    bootstrap = ctx.gamma * (~terminated).to(log_pi.dtype)
    decay = ctx.gamma * ratio.clamp(max=ctx.c_thresh) * not_done
    # advantage[t] reads the next-state target: inside an episode v[t + 1] = state_value[t + 1]
    # + d[t + 1], at an episode end and at the last step next_state_value[t].
    to_next = grad_advantage * rho * bootstrap
    inside = not_done.clone()
    if inside.shape[0]:
        inside[-1] = 0.0
    via_next = (to_next * inside)[:-1]
    # The correction d[t] feeds value_target[t] and, through v[t], advantage[t - 1].
    source = grad_target.clone()
    source[1:] += via_next
    grad_correction = _forward_scan(source, decay)
    grad_delta = rho * (grad_correction + grad_advantage)
    grad_value = grad_target - grad_delta
    grad_value[1:] += via_next
    grad_next_value = bootstrap * rho * grad_correction + to_next * (1 - inside)
    return (
        None,
        None,
        None,
        None,
        None,
        grad_value,
        grad_next_value,
        grad_delta,
        None,
        None,
    )
