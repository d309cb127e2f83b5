"""A Gaussian restricted to an interval: :class:`TruncatedNormal`."""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import distributions as D
from torch.distributions import constraints
from torch.special import log_ndtr, ndtr, ndtri

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_size = torch.Size
_NO_SAMPLE_SHAPE = torch.Size()


def _log_phi(z: torch.Tensor) -> torch.Tensor:
    """Log-density of the standard normal."""
    return -0.5 * z.square() - _LOG_SQRT_2PI


def _z_phi(z: torch.Tensor) -> torch.Tensor:
    """``z * phi(z)``, with the limit 0 at ``z = ±inf``."""
    return torch.where(z.isinf(), torch.zeros_like(z), z * _log_phi(z).exp())


class TruncatedNormal(D.Distribution):
    """A Gaussian ``Normal(loc, scale)`` conditioned on lying in ``[low, high]``.

    Elementwise (batch-only, no event dimensions): wrap it in
    :class:`torch.distributions.Independent` to score vector actions jointly.

    The numerics work in standard units ``a = (low - loc) / scale``, ``b = (high - loc) /
    scale``, mirrored so that the interval never sits in the upper tail (``a <= 0`` or the
    interval is mirrored to ``[-b, -a]``); the normaliser is ``log Z = log(Phi(b) - Phi(a))``
    computed from ``log_ndtr``, so intervals far in a tail keep finite, accurate log-densities.
    Sampling inverts the CDF, ``x = loc + scale * ndtri(Phi(a) + u * Z)``, which is
    reparameterised.

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
        ValueError: ``low`` is not below ``high`` everywhere, or the shapes do not broadcast.

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
        if not bool((low_t < high_t).all()):
            raise ValueError(
                "TruncatedNormal: expected low < high everywhere, got "
                f"low={low_t.tolist()} and high={high_t.tolist()}. Swap or widen the bounds."
            )
        self.loc, self.scale, self.low, self.high = loc, scale, low_t, high_t
        super().__init__(batch_shape=loc.shape, validate_args=validate_args)
        a = (low_t - loc) / scale
        b = (high_t - loc) / scale
        # Mirror intervals that sit in the upper tail into the lower one, where ndtr is exact.
        self._flip = a > 0
        self._a = torch.where(self._flip, -b, a)
        self._b = torch.where(self._flip, -a, b)
        self._sign = torch.where(self._flip, -1.0, 1.0).to(loc.dtype)
        log_cdf_a, log_cdf_b = log_ndtr(self._a), log_ndtr(self._b)
        # log(Phi(b) - Phi(a)) = log Phi(b) + log(1 - Phi(a) / Phi(b)).
        self._log_z = log_cdf_b + torch.log1p(-torch.exp(log_cdf_a - log_cdf_b))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    def _standard_moments(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and variance of the mirrored standard truncated normal on ``[a, b]``."""
        phi_a = (_log_phi(self._a) - self._log_z).exp()
        phi_b = (_log_phi(self._b) - self._log_z).exp()
        mean = phi_a - phi_b
        inv_z = (-self._log_z).exp()
        variance = 1.0 + (_z_phi(self._a) - _z_phi(self._b)) * inv_z - mean.square()
        return mean, variance

    @property
    def mean(self) -> torch.Tensor:
        """``loc + scale * (phi(a) - phi(b)) / Z`` in standard units ``a``, ``b``."""
        mean, _ = self._standard_moments()
        return self.loc + self.scale * self._sign * mean

    @property
    def variance(self) -> torch.Tensor:
        """``scale**2 * (1 + (a phi(a) - b phi(b)) / Z - ((phi(a) - phi(b)) / Z)**2)``."""
        _, variance = self._standard_moments()
        return self.scale.square() * variance.clamp_min(0.0)

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
        finfo = torch.finfo(self.loc.dtype)
        u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        # Keep u off 0 and 1, whose quantiles are infinite for an unbounded side.
        return self.icdf(u.clamp(finfo.tiny, 1.0 - finfo.eps))

    def icdf(self, value: torch.Tensor) -> torch.Tensor:
        """The quantile function: the ``x`` in ``[low, high]`` with ``cdf(x) = value``."""
        # In the mirrored frame the quantile of u is the quantile of 1 - u of the original.
        u = torch.where(self._flip, 1.0 - value, value)
        cdf_a, cdf_b = ndtr(self._a), ndtr(self._b)
        z = ndtri(cdf_a + u * (cdf_b - cdf_a))
        z = torch.minimum(torch.maximum(z, self._a), self._b)
        x = self.loc + self.scale * self._sign * z
        return torch.minimum(torch.maximum(x, self.low), self.high)

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        """``P(X <= value)``, 0 below ``low`` and 1 above ``high``."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale * self._sign
        z = torch.minimum(torch.maximum(z, self._a), self._b)
        mirrored = ((ndtr(z) - ndtr(self._a)) * (-self._log_z).exp()).clamp(0.0, 1.0)
        return torch.where(self._flip, 1.0 - mirrored, mirrored)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """``log phi((value - loc) / scale) - log(scale) - log Z``; ``-inf`` outside the interval."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        log_prob = _log_phi(z) - self.scale.log() - self._log_z
        inside = (value >= self.low) & (value <= self.high)
        return torch.where(inside, log_prob, torch.full_like(log_prob, -math.inf))

    def entropy(self) -> torch.Tensor:
        """``log(sqrt(2 pi e) * scale * Z) + (a phi(a) - b phi(b)) / (2 Z)``."""
        inv_z = (-self._log_z).exp()
        return (
            _LOG_SQRT_2PI
            + 0.5
            + self.scale.log()
            + self._log_z
            + 0.5 * (_z_phi(self._a) - _z_phi(self._b)) * inv_z
        )
