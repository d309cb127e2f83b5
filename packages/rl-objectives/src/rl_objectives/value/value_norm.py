"""Running normalisers of value targets: :class:`ValueNorm` and three implementations.

- :class:`PopArtValueNorm`: debiased exponential moving averages of the mean and the mean of
  squares (van Hasselt et al., "Learning values across many orders of magnitude", 2016; the
  value normaliser of MAPPO, Yu et al. 2022).
- :class:`RunningValueNorm`: the exact mean and (population) variance of every target seen,
  merged batch by batch (Chan et al.'s parallel update).
- :class:`PercentileValueNorm`: moving averages of a low and a high quantile, dividing by
  their span clamped from below (DreamerV3's return normalisation, Hafner et al. 2023).

All three reduce every leading dimension of a target (batch, time, agents) and keep one
statistic per element of the trailing ``shape``. TorchRL 0.14 holds these classes in
``torchrl.modules``; here they sit beside the value estimators.
"""

from __future__ import annotations

import abc
import math

import torch
from torch import Tensor, nn

__all__ = ["ValueNorm", "PopArtValueNorm", "RunningValueNorm", "PercentileValueNorm"]


class ValueNorm(nn.Module, abc.ABC):
    """A running estimate of the location and scale of value targets.

    A critic loss compares ``normalize(target)`` with ``normalize(prediction)``, so its
    magnitude stays fixed while the reward scale drifts; :meth:`denormalize` maps back.
    Subclasses implement :meth:`update`, :meth:`normalize`, :meth:`denormalize` and
    :meth:`scale`, all on tensors whose trailing dims equal :attr:`shape`.

    Keyword Args:
        shape: the per-element shape of a value (the trailing dims); every leading dim is
            reduced. Defaults to 1.
        epsilon: numerical floor (of the variance or the debiasing term). Defaults to 1e-5.
        device: where the statistics live. Defaults to the default device.
    """

    def __init__(
        self,
        *,
        shape: int | tuple[int, ...] = 1,
        epsilon: float = 1e-5,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if epsilon <= 0:
            raise ValueError(f"{type(self).__name__}: expected epsilon > 0, got {epsilon}.")
        self.epsilon = float(epsilon)

    @abc.abstractmethod
    def update(self, value_target: Tensor) -> None:
        """Folds a batch of value targets into the running statistics."""

    @abc.abstractmethod
    def normalize(self, value_target: Tensor) -> Tensor:
        """Maps real-scale values to the normalised scale."""

    @abc.abstractmethod
    def denormalize(self, normalised_value: Tensor) -> Tensor:
        """The inverse of :meth:`normalize`."""

    @abc.abstractmethod
    def scale(self) -> Tensor:
        """The divisor :meth:`normalize` applies (for quantities that must not be re-centred,
        such as advantages)."""

    def _reduce_dims(self, value_target: Tensor) -> tuple[int, ...]:
        n = len(self.shape)
        if tuple(value_target.shape[value_target.dim() - n :]) != self.shape:
            raise ValueError(
                f"{type(self).__name__}: expected a value whose trailing shape is {self.shape}, "
                f"got shape {tuple(value_target.shape)}. Build the normaliser with "
                f"shape={tuple(value_target.shape[-n:]) if n else ()} or reshape the value."
            )
        return tuple(range(value_target.dim() - n))


class PopArtValueNorm(ValueNorm):
    """Debiased exponential moving averages of the mean ``mu`` and mean of squares ``nu``.

    After each batch (mean ``m``, mean of squares ``q``):
    ``mu <- beta mu + (1 - beta) m``, ``nu <- beta nu + (1 - beta) q``,
    ``d <- beta d + (1 - beta)`` (all three start at 0). The statistics used are
    ``mean = mu / max(d, epsilon)``, ``var = max(nu / max(d, epsilon) - mean^2, epsilon)``;
    ``normalize(x) = (x - mean) / sqrt(var)``. ``update(target, layer=head)`` also rescales
    the output layer of a critic that predicts normalised values so that its real-scale
    outputs are preserved (van Hasselt et al. 2016).

    Keyword Args:
        shape: see :class:`ValueNorm`. Defaults to 1.
        beta: decay of the averages. Defaults to 0.99999 (MAPPO's).
        epsilon: see :class:`ValueNorm`. Defaults to 1e-5.
        device: see :class:`ValueNorm`.

    Examples:
        >>> import torch
        >>> from rl_objectives.value import PopArtValueNorm
        >>> vn = PopArtValueNorm(beta=0.9)
        >>> vn.update(torch.tensor([[1.0], [3.0]]))
        >>> vn.normalize(torch.tensor([[3.0]])).item()
        1.0
    """

    def __init__(
        self,
        *,
        shape: int | tuple[int, ...] = 1,
        beta: float = 0.99999,
        epsilon: float = 1e-5,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(shape=shape, epsilon=epsilon, device=device)
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"PopArtValueNorm: expected beta in [0, 1), got {beta}.")
        self.beta = float(beta)
        self.register_buffer("running_mean", torch.zeros(self.shape, device=device))
        self.register_buffer("running_mean_sq", torch.zeros(self.shape, device=device))
        self.register_buffer("debiasing_term", torch.zeros((), device=device))

    def _stats(self) -> tuple[Tensor, Tensor]:
        debias = self.debiasing_term.clamp(min=self.epsilon)
        mean = self.running_mean / debias
        var = (self.running_mean_sq / debias - mean.pow(2)).clamp(min=self.epsilon)
        return mean, var

    @torch.no_grad()
    def update(self, value_target: Tensor, *, layer: nn.Linear | None = None) -> None:
        """Folds a batch into the averages.

        Args:
            value_target: real-scale targets whose trailing shape is :attr:`shape`.

        Keyword Args:
            layer: the last linear layer of a critic that predicts *normalised* values
                (``out_features`` equal to the number of elements of :attr:`shape`). Its
                weight and bias are rescaled so that ``denormalize(layer(h))`` is unchanged
                by this update, PopArt's "preserving outputs precisely" step:
                ``W <- W sigma_old / sigma_new``,
                ``b <- (sigma_old b + mu_old - mu_new) / sigma_new``. Defaults to ``None``.
        """
        dims = self._reduce_dims(value_target)
        if layer is not None and layer.out_features != math.prod(self.shape):
            raise ValueError(
                f"PopArtValueNorm.update: expected a layer with out_features="
                f"{math.prod(self.shape)} (the elements of shape={self.shape}), got "
                f"{layer.out_features}."
            )
        old_mean, old_var = self._stats()
        x = value_target.detach().to(self.running_mean.dtype)
        batch_mean = x.mean(dims) if dims else x
        batch_mean_sq = x.pow(2).mean(dims) if dims else x.pow(2)
        self.running_mean.mul_(self.beta).add_((1.0 - self.beta) * batch_mean)
        self.running_mean_sq.mul_(self.beta).add_((1.0 - self.beta) * batch_mean_sq)
        self.debiasing_term.mul_(self.beta).add_(1.0 - self.beta)
        if layer is not None:
            new_mean, new_var = self._stats()
            old_std, new_std = old_var.sqrt().reshape(-1), new_var.sqrt().reshape(-1)
            old_mean, new_mean = old_mean.reshape(-1), new_mean.reshape(-1)
            ratio = (old_std / new_std).to(layer.weight.dtype)
            layer.weight.mul_(ratio.unsqueeze(-1))
            if layer.bias is not None:
                shift = ((old_mean - new_mean) / new_std).to(layer.bias.dtype)
                layer.bias.mul_(ratio).add_(shift)

    def normalize(self, value_target: Tensor) -> Tensor:
        mean, var = self._stats()
        return (value_target - mean) / var.sqrt()

    def denormalize(self, normalised_value: Tensor) -> Tensor:
        mean, var = self._stats()
        return normalised_value * var.sqrt() + mean

    def scale(self) -> Tensor:
        return self._stats()[1].sqrt()


class RunningValueNorm(ValueNorm):
    """The exact mean and population variance of every target seen, without decay.

    A batch of ``n`` targets (mean ``m``, population variance ``v``) is merged into the
    count ``N``, mean ``mu`` and sum of squared deviations ``M2`` by
    ``delta = m - mu``, ``mu <- mu + delta n / (N + n)``,
    ``M2 <- M2 + v n + delta^2 N n / (N + n)``, ``N <- N + n``; the variance is
    ``max(M2 / max(N, 1), epsilon)``.

    Keyword Args:
        shape: see :class:`ValueNorm`. Defaults to 1.
        epsilon: see :class:`ValueNorm`. Defaults to 1e-5.
        device: see :class:`ValueNorm`.

    Examples:
        >>> import torch
        >>> from rl_objectives.value import RunningValueNorm
        >>> vn = RunningValueNorm()
        >>> vn.update(torch.tensor([[1.0], [3.0]]))
        >>> vn.update(torch.tensor([[5.0]]))
        >>> vn.mean.item(), round(vn.scale().item() ** 2, 4)
        (3.0, 2.6667)
    """

    def __init__(
        self,
        *,
        shape: int | tuple[int, ...] = 1,
        epsilon: float = 1e-5,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(shape=shape, epsilon=epsilon, device=device)
        self.register_buffer("mean", torch.zeros(self.shape, device=device))
        self.register_buffer("m2", torch.zeros(self.shape, device=device))
        self.register_buffer("count", torch.zeros((), device=device))

    @torch.no_grad()
    def update(self, value_target: Tensor) -> None:
        dims = self._reduce_dims(value_target)
        x = value_target.detach().to(self.mean.dtype)
        n = float(math.prod(x.shape[d] for d in dims))
        if n == 0:
            return
        batch_mean = x.mean(dims) if dims else x
        batch_var = x.var(dims, unbiased=False) if dims else torch.zeros_like(x)
        total = self.count + n
        delta = batch_mean - self.mean
        self.m2.add_(batch_var * n + delta.pow(2) * self.count * n / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)

    def _var(self) -> Tensor:
        return (self.m2 / self.count.clamp(min=1.0)).clamp(min=self.epsilon)

    def normalize(self, value_target: Tensor) -> Tensor:
        return (value_target - self.mean) / self._var().sqrt()

    def denormalize(self, normalised_value: Tensor) -> Tensor:
        return normalised_value * self._var().sqrt() + self.mean

    def scale(self) -> Tensor:
        return self._var().sqrt()


class PercentileValueNorm(ValueNorm):
    """Moving averages of a low and a high quantile; divides by their clamped span.

    After each batch with quantiles ``(p_lo, p_hi)`` (``torch.quantile``, linear
    interpolation, over the leading dims): ``low <- low + rate (p_lo - low)``,
    ``high <- high + rate (p_hi - high)`` (both start at 0, as in DreamerV3).
    ``scale = max(min_scale, high - low)``; ``normalize(x) = x / scale``, or
    ``(x - low) / scale`` with ``center=True``.

    Keyword Args:
        shape: see :class:`ValueNorm`. Defaults to 1.
        quantiles: the low and high quantiles. Defaults to ``(0.05, 0.95)``.
        rate: step of the moving averages towards the batch quantiles. Defaults to 0.01.
        min_scale: floor of the scale (large spans shrink values, small ones do not
            amplify them). Defaults to 1.0.
        center: also subtract ``low``. Defaults to ``False`` (scale only, for advantages).
        epsilon: see :class:`ValueNorm`. Defaults to 1e-5.
        device: see :class:`ValueNorm`.

    Examples:
        >>> import torch
        >>> from rl_objectives.value import PercentileValueNorm
        >>> vn = PercentileValueNorm(quantiles=(0.0, 1.0), rate=0.5)
        >>> vn.update(torch.tensor([[0.0], [8.0]]))
        >>> vn.scale().item(), vn.normalize(torch.tensor([[8.0]])).item()
        (4.0, 2.0)
    """

    def __init__(
        self,
        *,
        shape: int | tuple[int, ...] = 1,
        quantiles: tuple[float, float] = (0.05, 0.95),
        rate: float = 0.01,
        min_scale: float = 1.0,
        center: bool = False,
        epsilon: float = 1e-5,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(shape=shape, epsilon=epsilon, device=device)
        lo, hi = (float(q) for q in quantiles)
        if not 0.0 <= lo < hi <= 1.0:
            raise ValueError(
                f"PercentileValueNorm: expected quantiles (low, high) with 0 <= low < high <= 1, "
                f"got {tuple(quantiles)}."
            )
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"PercentileValueNorm: expected rate in (0, 1], got {rate}.")
        if min_scale <= 0:
            raise ValueError(f"PercentileValueNorm: expected min_scale > 0, got {min_scale}.")
        self.quantiles = (lo, hi)
        self.rate = float(rate)
        self.min_scale = float(min_scale)
        self.center = bool(center)
        self.register_buffer("low", torch.zeros(self.shape, device=device))
        self.register_buffer("high", torch.zeros(self.shape, device=device))

    @torch.no_grad()
    def update(self, value_target: Tensor) -> None:
        dims = self._reduce_dims(value_target)
        x = value_target.detach().to(self.low.dtype)
        flat = x.reshape(-1, *self.shape) if dims else x.unsqueeze(0)
        if flat.shape[0] == 0:
            return
        q = torch.tensor(self.quantiles, dtype=flat.dtype, device=flat.device)
        p_lo, p_hi = torch.quantile(flat, q, dim=0)
        self.low.add_(self.rate * (p_lo - self.low))
        self.high.add_(self.rate * (p_hi - self.high))

    def scale(self) -> Tensor:
        return (self.high - self.low).clamp(min=self.min_scale)

    def normalize(self, value_target: Tensor) -> Tensor:
        shifted = value_target - self.low if self.center else value_target
        return shifted / self.scale()

    def denormalize(self, normalised_value: Tensor) -> Tensor:
        value = normalised_value * self.scale()
        return value + self.low if self.center else value
