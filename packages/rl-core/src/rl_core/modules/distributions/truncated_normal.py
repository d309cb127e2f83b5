"""A Gaussian restricted to an interval: :class:`TruncatedNormal`."""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import distributions as D
from torch.distributions import constraints
from torch.special import log_ndtr, ndtri

from rl_core.modules.distributions._checks import check_ordered, validating

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_size = torch.Size
_NO_SAMPLE_SHAPE = torch.Size()


def _log_phi(z: torch.Tensor) -> torch.Tensor:
    """Log-density of the standard normal."""
    return -0.5 * z.square() - _LOG_SQRT_2PI


def _ndtri_exp(log_p: torch.Tensor) -> torch.Tensor:
    """The ``z`` with ``log Phi(z) = log_p``: ``ndtri(exp(log_p))`` without underflow.

    Where ``exp(log_p)`` is a normal float, ``ndtri`` of it is accurate. Below that (``z``
    under about -13 in float32, -37 in float64), start from the asymptote ``log Phi(z) ~
    -z**2 / 2 - log(-z) - log(2 pi) / 2`` and refine with Newton steps on ``log_ndtr``.
    """
    tiny = math.log(torch.finfo(log_p.dtype).tiny)
    bulk = ndtri(log_p.clamp_min(tiny).exp())
    # Each branch only sees inputs valid for it, so torch.where passes no nan gradient.
    log_p_tail = log_p.clamp_max(tiny)
    t = (-2.0 * log_p_tail).clamp_min(2.0)
    z = -torch.sqrt(t - torch.log(2.0 * math.pi * t))
    for _ in range(4):
        # d/dz log Phi(z) = phi(z) / Phi(z).
        slope = (_log_phi(z) - log_ndtr(z)).exp()
        z = z - (log_ndtr(z) - log_p_tail) / slope
    return torch.where(log_p > tiny, bulk, z)


class TruncatedNormal(D.Distribution):
    """A Gaussian ``Normal(loc, scale)`` conditioned on lying in ``[low, high]``.

    Elementwise (batch-only, no event dimensions): wrap it in
    :class:`torch.distributions.Independent` to score vector actions jointly.

    The numerics work in standard units ``a = (low - loc) / scale``, ``b = (high - loc) /
    scale``, mirrored so that the interval never sits in the upper tail (``a <= 0`` or the
    interval is mirrored to ``[-b, -a]``); the normaliser is ``log Z = log(Phi(b) - Phi(a))``
    computed from ``log_ndtr``, so intervals far in a tail keep finite, accurate log-densities.
    Sampling inverts the CDF, ``x = loc + scale * ndtri(Phi(a) + u * Z)``, in log space so that
    intervals many standard deviations away from ``loc`` (a policy whose ``loc`` left the
    action box) still give samples inside it; it is reparameterised.

    Values picked under each exploration type (see :mod:`rl_core.exploration`):

    - ``RANDOM``: :meth:`rsample`.
    - ``DETERMINISTIC``: :attr:`deterministic_sample`, the mean (as tensordict does for its
      own truncated normal).
    - ``MODE``: :attr:`mode`, ``loc`` clamped to ``[low, high]``.
    - ``MEAN``: :attr:`mean`, the exact mean of the truncated Gaussian.

    Args:
        loc: mean of the untruncated Gaussian.
        scale: its standard deviation, positive.
        low: lower end of the interval (may be ``-inf``). Defaults to ``-1.0``.
        high: upper end of the interval (may be ``inf``), above ``low``. Defaults to ``1.0``.

    Keyword Args:
        validate_args: forwarded to :class:`torch.distributions.Distribution`.

    Raises:
        ValueError: ``low`` is not below ``high`` everywhere (tensor bounds are compared only
            with argument validation on), or the shapes do not broadcast.

    Examples:
        >>> import torch
        >>> from rl_core.modules.distributions import TruncatedNormal
        >>> dist = TruncatedNormal(torch.zeros(3), torch.ones(3), low=0.0, high=float("inf"))
        >>> print(dist.mean)
        tensor([0.7979, 0.7979, 0.7979])
        >>> print(dist.log_prob(torch.zeros(3)))
        tensor([-0.2258, -0.2258, -0.2258])
        >>> print(bool((dist.sample((100,)) >= 0).all()))
        True
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "low": constraints.dependent,
        "high": constraints.dependent,
    }
    has_rsample = True

    def __init__(
        self,
        loc: torch.Tensor,
        scale: torch.Tensor,
        low: float | torch.Tensor = -1.0,
        high: float | torch.Tensor = 1.0,
        *,
        validate_args: bool | None = None,
    ) -> None:
        low_t = torch.as_tensor(low, dtype=loc.dtype, device=loc.device)
        high_t = torch.as_tensor(high, dtype=loc.dtype, device=loc.device)
        try:
            loc, scale, low_t, high_t = torch.broadcast_tensors(loc, scale, low_t, high_t)
        except RuntimeError as err:
            raise ValueError(
                f"TruncatedNormal: loc {tuple(loc.shape)}, scale {tuple(scale.shape)}, low "
                f"{tuple(low_t.shape)} and high {tuple(high_t.shape)} do not broadcast together. "
                f"Give them compatible shapes."
            ) from err
        check_ordered("TruncatedNormal", low, high, validate=validating(validate_args))
        self.loc, self.scale, self.low, self.high = loc, scale, low_t, high_t
        super().__init__(batch_shape=loc.shape, validate_args=validate_args)
        # The normaliser, moments and quantiles are computed in float64: for an interval many
        # standard deviations from loc, float32 loses most digits of log Z and of the mean.
        loc64, scale64 = loc.double(), scale.double()

        def standardize(bound: torch.Tensor) -> torch.Tensor:
            # An infinite end stays a constant ±inf, outside the gradient path to loc/scale.
            infinite = bound.isinf()
            finite = (torch.where(infinite, 0.0, bound.double()) - loc64) / scale64
            return torch.where(infinite, bound.double(), finite)

        a, b = standardize(low_t), standardize(high_t)
        # Mirror intervals that sit in the upper tail into the lower one, where Phi is exact.
        self._flip = a > 0
        self._a = torch.where(self._flip, -b, a)
        self._b = torch.where(self._flip, -a, b)
        self._sign = torch.where(self._flip, -1.0, 1.0).to(torch.float64)
        self._log_cdf_a, log_cdf_b = log_ndtr(self._a), log_ndtr(self._b)
        # log(Phi(b) - Phi(a)) = log Phi(b) + log(1 - Phi(a) / Phi(b)).
        self._log_z = log_cdf_b + torch.log1p(-torch.exp(self._log_cdf_a - log_cdf_b))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    def _ratio(self, z: torch.Tensor, *, times_z: bool = False) -> torch.Tensor:
        """``phi(z) / Z`` (or ``z * phi(z) / Z``), 0 at ``z = ±inf``; float64."""
        # Select before exp and before multiplying by z: masking afterwards would leave
        # inf * 0 = nan in the backward pass.
        infinite = z.isinf()
        finite_z = torch.where(infinite, torch.zeros_like(z), z)
        exponent = torch.where(infinite, -math.inf, _log_phi(finite_z) - self._log_z)
        ratio = exponent.exp()
        return finite_z * ratio if times_z else ratio

    def _standard_moments(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and variance of the mirrored standard truncated normal on ``[a, b]``; float64."""
        mean = self._ratio(self._a) - self._ratio(self._b)
        spread = self._ratio(self._a, times_z=True) - self._ratio(self._b, times_z=True)
        return mean, 1.0 + spread - mean.square()

    def _from_standard(self, z: torch.Tensor) -> torch.Tensor:
        """Maps a mirrored standard value back to ``loc + scale * z``, in the input dtype."""
        x = self.loc.double() + self.scale.double() * self._sign * z
        return x.to(self.loc.dtype)

    @property
    def mean(self) -> torch.Tensor:
        """``loc + scale * (phi(a) - phi(b)) / Z`` in standard units ``a``, ``b``."""
        mean, _ = self._standard_moments()
        return self._from_standard(mean)

    @property
    def variance(self) -> torch.Tensor:
        """``scale**2 * (1 + (a phi(a) - b phi(b)) / Z - ((phi(a) - phi(b)) / Z)**2)``."""
        _, variance = self._standard_moments()
        return self.scale.square() * variance.clamp_min(0.0).to(self.loc.dtype)

    @property
    def mode(self) -> torch.Tensor:
        """``loc`` clamped to ``[low, high]``."""
        return torch.maximum(torch.minimum(self.loc, self.high), self.low)

    @property
    def deterministic_sample(self) -> torch.Tensor:
        """The mean: the action of ``ExplorationType.DETERMINISTIC``."""
        return self.mean

    def rsample(
        self, sample_shape: torch.Size | tuple[int, ...] = _NO_SAMPLE_SHAPE
    ) -> torch.Tensor:
        """Draws reparameterised samples by inverting the CDF.

        Args:
            sample_shape: leading shape of the samples. Defaults to ``()``.

        Returns:
            Samples of shape ``[*sample_shape, *batch_shape]`` inside ``[low, high]``.
        """
        shape = self._extended_shape(sample_shape)
        finfo = torch.finfo(torch.float64)
        u = torch.rand(shape, dtype=torch.float64, device=self.loc.device)
        # Keep u off 0 and 1, whose quantiles are infinite for an unbounded side.
        return self.icdf(u.clamp(finfo.tiny, 1.0 - finfo.eps))

    def icdf(self, value: torch.Tensor) -> torch.Tensor:
        """The quantile function: the ``x`` in ``[low, high]`` with ``cdf(x) = value``."""
        # In the mirrored frame the quantile of u is the quantile of 1 - u of the original.
        value = value.double()
        u = torch.where(self._flip, 1.0 - value, value)
        # Phi(a) + u * Z = Phi(a) + u * (Phi(b) - Phi(a)), in logs: log(Phi(a) + u * Z).
        log_p = torch.logaddexp(self._log_cdf_a, torch.log(u) + self._log_z)
        z = _ndtri_exp(log_p)
        z = torch.minimum(torch.maximum(z, self._a), self._b)
        x = self._from_standard(z)
        return torch.minimum(torch.maximum(x, self.low), self.high)

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        """``P(X <= value)``, 0 below ``low`` and 1 above ``high``."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value.double() - self.loc.double()) / self.scale.double() * self._sign
        z = torch.minimum(torch.maximum(z, self._a), self._b)
        # (Phi(z) - Phi(a)) / Z = exp(log Phi(z) - log Z) * (1 - Phi(a) / Phi(z)).
        log_cdf_z = log_ndtr(z)
        mirrored = (log_cdf_z - self._log_z).exp() * -torch.expm1(self._log_cdf_a - log_cdf_z)
        mirrored = mirrored.clamp(0.0, 1.0)
        return torch.where(self._flip, 1.0 - mirrored, mirrored).to(self.loc.dtype)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """``log phi((value - loc) / scale) - log(scale) - log Z``; ``-inf`` outside the interval."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        log_prob = _log_phi(z) - self.scale.log() - self._log_z.to(self.loc.dtype)
        inside = (value >= self.low) & (value <= self.high)
        return torch.where(inside, log_prob, torch.full_like(log_prob, -math.inf))

    def entropy(self) -> torch.Tensor:
        """``log(sqrt(2 pi e) * scale * Z) + (a phi(a) - b phi(b)) / (2 Z)``."""
        spread = self._ratio(self._a, times_z=True) - self._ratio(self._b, times_z=True)
        standard = _LOG_SQRT_2PI + 0.5 + self._log_z + 0.5 * spread
        return self.scale.log() + standard.to(self.loc.dtype)
