"""Private numerics of the tanh-squashed distributions.

- :class:`_ClampedTanhTransform`: ``y = tanh(x)`` whose inverse never returns an infinite
  value, so log-probabilities stay finite for actions on the bounds.
- :func:`tanh_normal_mode`: the mode of ``tanh(X)`` for ``X ~ Normal(loc, scale)``.
- :func:`tanh_normal_mean`: the mean of ``tanh(X)`` by quadrature.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch
from torch.distributions import Transform, constraints
from torch.nn.functional import softplus

_LOG2 = math.log(2.0)
# Enough halvings to shrink any bracket below one float64 ulp of the bracket's width.
_BISECTION_STEPS = 64
_QUADRATURE_NODES = 64
# Beyond |x| = 20, tanh(x) and sign(x) differ by less than 1e-17.
_TANH_TAIL_LENGTH = 20.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _open_unit_bound(dtype: torch.dtype) -> float:
    """Largest float of ``dtype`` below 1 at which ``atanh`` is still finite, with margin."""
    return 1.0 - torch.finfo(dtype).eps


def tanh_log_abs_det(x: torch.Tensor) -> torch.Tensor:
    """``log(1 - tanh(x)**2)`` without cancellation, elementwise.

    Uses ``1 - tanh(x)**2 = 4 / (exp(x) + exp(-x))**2``, written with ``softplus`` so that it
    neither overflows nor loses precision for large ``|x|``.
    """
    return 2.0 * (_LOG2 - x - softplus(-2.0 * x))


class _ClampedTanhTransform(Transform):
    """``y = tanh(x)``; with ``clamp`` the output and the inverse's input stay inside (-1, 1).

    With ``clamp=True`` (the default) samples never reach ±1 exactly and ``atanh`` is taken of
    a value clamped to ``[-1 + eps, 1 - eps]`` (``eps`` of the dtype), so a value on the bound
    has a finite pre-image. With ``clamp=False`` this is the plain bijection.
    """

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __init__(self, *, clamp: bool = True, cache_size: int = 1) -> None:
        super().__init__(cache_size=cache_size)
        self.clamp = clamp

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ClampedTanhTransform) and other.clamp == self.clamp

    def with_cache(self, cache_size: int = 1) -> _ClampedTanhTransform:
        if self._cache_size == cache_size:
            return self
        return _ClampedTanhTransform(clamp=self.clamp, cache_size=cache_size)

    def _call(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(x)
        if self.clamp:
            bound = _open_unit_bound(y.dtype)
            y = y.clamp(-bound, bound)
        return y

    def _inverse(self, y: torch.Tensor) -> torch.Tensor:
        if self.clamp:
            bound = _open_unit_bound(y.dtype)
            y = y.clamp(-bound, bound)
        return torch.atanh(y)

    def log_abs_det_jacobian(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return tanh_log_abs_det(x)


def _stationarity_gap(x: torch.Tensor, loc: torch.Tensor, curvature: torch.Tensor) -> torch.Tensor:
    """``g(x) = x - loc - curvature * tanh(x)``: zero where the squashed density is stationary."""
    return x - loc - curvature * torch.tanh(x)


def _bisect(
    lo: torch.Tensor, hi: torch.Tensor, loc: torch.Tensor, curvature: torch.Tensor
) -> torch.Tensor:
    """Root of the increasing-on-``[lo, hi]`` gap, given ``g(lo) <= 0 <= g(hi)``."""
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        below = _stationarity_gap(mid, loc, curvature) < 0
        lo = torch.where(below, mid, lo)
        hi = torch.where(below, hi, mid)
    return 0.5 * (lo + hi)


def tanh_normal_mode(loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Pre-tanh point ``x`` at which the density of ``tanh(X)``, ``X ~ N(loc, scale**2)``, peaks.

    The log-density of ``y = tanh(x)`` is ``log N(x; loc, scale) - log(1 - tanh(x)**2)`` up to
    a constant. Its stationary points solve ``x = loc + c * tanh(x)`` with ``c = 2 * scale**2``.
    For ``c <= 1`` the gap ``g(x) = x - loc - c * tanh(x)`` increases everywhere, so the root is
    unique. For ``c > 1``, ``g`` decreases on ``(-x_c, x_c)`` with ``x_c = acosh(sqrt(c))`` and
    increases outside: there is at most one root on each outer branch (a local maximum) and one
    in the middle (a local minimum). Each outer root is found by bisection on its branch; when
    both exist, the one with the higher density wins (ties go to the right branch).

    Args:
        loc: mean of the Gaussian before the tanh, shape ``[*S]``.
        scale: its standard deviation, broadcastable to ``[*S]``, positive.

    Returns:
        The pre-tanh mode, shape ``[*S]``, same dtype as ``loc``. ``tanh`` of it is the mode
        of the squashed variable.
    """
    loc, scale = torch.broadcast_tensors(loc, scale)
    curvature = 2.0 * scale.square()
    # acosh(sqrt(c)) is only defined for c >= 1; below that there is no decreasing part, and
    # -inf / +inf make both branch brackets span the whole [loc - c, loc + c].
    turn = torch.where(
        curvature > 1.0,
        torch.acosh(curvature.clamp_min(1.0).sqrt()),
        torch.full_like(loc, -math.inf),
    )
    lo_all, hi_all = loc - curvature, loc + curvature
    right_lo = torch.maximum(turn, lo_all)
    left_hi = torch.minimum(-turn, hi_all)
    has_right = _stationarity_gap(right_lo, loc, curvature) <= 0
    has_left = _stationarity_gap(left_hi, loc, curvature) >= 0
    # Brackets of a branch without a root are replaced by a valid dummy; its result is unused.
    right = _bisect(torch.where(has_right, right_lo, lo_all), hi_all, loc, curvature)
    left = _bisect(lo_all, torch.where(has_left, left_hi, hi_all), loc, curvature)

    def log_density(x: torch.Tensor) -> torch.Tensor:
        return -0.5 * ((x - loc) / scale).square() - tanh_log_abs_det(x)

    right_wins = has_right & (~has_left | (log_density(right) >= log_density(left)))
    return torch.where(right_wins, right, left)


@lru_cache(maxsize=2)
def _quadrature_rules() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes/weights for ``E[f(Z)]``, and Gauss-Legendre ones on ``[0, L]``."""
    hermite_nodes, hermite_weights = np.polynomial.hermite.hermgauss(_QUADRATURE_NODES)
    legendre_nodes, legendre_weights = np.polynomial.legendre.leggauss(_QUADRATURE_NODES)
    half = _TANH_TAIL_LENGTH / 2
    return (
        math.sqrt(2.0) * hermite_nodes,
        hermite_weights / math.sqrt(math.pi),
        half * (legendre_nodes + 1.0),
        half * legendre_weights,
    )


def tanh_normal_mean(loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``E[tanh(X)]`` for ``X ~ N(loc, scale**2)``, by quadrature (no closed form exists).

    Two 64-node rules, each used where it is accurate:

    - ``scale <= 1``: Gauss-Hermite in standard units, ``sum_i w_i tanh(loc + scale z_i)``.
      ``tanh`` varies slowly over the Gaussian's width, so the rule is near exact.
    - ``scale > 1``: the Gaussian is wider than the tanh's transition, which Gauss-Hermite
      resolves poorly. Write ``tanh(x) = sign(x) + r(x)`` with ``r(x) = -sign(x) * 2 / (1 +
      exp(2|x|))``: ``E[sign(X)] = erf(loc / (scale * sqrt(2)))`` exactly, and ``E[r(X)]``
      integrates a function that decays like ``exp(-2|x|)``, with Gauss-Legendre on
      ``[0, 20]`` and its mirror (the jump of ``r`` at 0 sits on the panels' edge).

    Against a fine trapezoid reference in float64, the error stays below 1e-7 for ``scale``
    from 0.05 to 30 and ``loc`` from -3 to 2.

    Args:
        loc: mean of the Gaussian before the tanh, shape ``[*S]``.
        scale: its standard deviation, broadcastable to ``[*S]``, positive.

    Returns:
        The mean of the squashed variable, shape ``[*S]``, in ``(-1, 1)``.
    """
    loc, scale = torch.broadcast_tensors(loc, scale)
    as_tensor = lambda a: torch.as_tensor(a, dtype=loc.dtype, device=loc.device)  # noqa: E731
    hermite_nodes, hermite_weights, legendre_nodes, legendre_weights = map(
        as_tensor, _quadrature_rules()
    )
    loc_, scale_ = loc.unsqueeze(-1), scale.unsqueeze(-1)
    narrow = (torch.tanh(loc_ + scale_ * hermite_nodes) * hermite_weights).sum(-1)

    def density(x: torch.Tensor) -> torch.Tensor:
        return torch.exp(-0.5 * ((x - loc_) / scale_).square()) / (scale_ * _SQRT_2PI)

    tail = -2.0 * torch.sigmoid(-2.0 * legendre_nodes)
    remainder = tail * (density(legendre_nodes) - density(-legendre_nodes))
    wide = torch.erf(loc / (scale * math.sqrt(2.0))) + (remainder * legendre_weights).sum(-1)
    return torch.where(scale <= 1.0, narrow, wide)
