"""Batch renormalisation: :class:`BatchRenorm1d` (Ioffe, "Batch Renormalization", 2017)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["BatchRenorm1d"]


class BatchRenorm1d(nn.Module):
    """Batch normalisation corrected towards the running statistics (Ioffe 2017).

    In training, with the batch mean ``mu_B`` and standard deviation
    ``sigma_B = sqrt(var_B + eps)`` (per feature, over every dim but dim 1) and the running
    ``mu``, ``sigma = sqrt(running_var + eps)``:
    ``y = weight * ((x - mu_B) / sigma_B * r + d) + bias`` with the gradient-free corrections
    ``r = clip(sigma_B / sigma, 1 / max_r, max_r)`` and ``d = clip((mu_B - mu) / sigma, -max_d,
    max_d)``. The running statistics move by ``momentum`` towards the batch's (the unbiased
    variance). During the first ``warmup_steps`` training batches ``r = 1`` and ``d = 0``
    (plain batch norm); with ``smooth=True`` they move linearly from there to their full value.
    In eval mode ``y = weight * (x - mu) / sigma + bias``.

    Args:
        num_features: size of dim 1 of the input.

    Keyword Args:
        momentum: step of the running statistics, in ``(0, 1]``. Defaults to 0.01.
        eps: added to the variances, ``> 0``. Defaults to 1e-5.
        max_r: bound of ``r``, ``>= 1``. Defaults to 3.0.
        max_d: bound of ``d``, ``>= 0``. Defaults to 5.0.
        warmup_steps: batches of plain batch norm first, ``>= 0``. Defaults to 10000.
        smooth: ramp ``r`` and ``d`` in over the warm-up instead of switching at its end.
            Defaults to ``False``.

    Raises:
        ValueError: an argument out of its range; at call time, an input with fewer than 2
            dims, a dim 1 other than ``num_features``, or a single value per feature in
            training.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import BatchRenorm1d
        >>> norm = BatchRenorm1d(3, warmup_steps=0)
        >>> norm(torch.randn(8, 3)).shape
        torch.Size([8, 3])
        >>> int(norm.num_batches_tracked)
        1
    """

    def __init__(
        self,
        num_features: int,
        *,
        momentum: float = 0.01,
        eps: float = 1e-5,
        max_r: float = 3.0,
        max_d: float = 5.0,
        warmup_steps: int = 10000,
        smooth: bool = False,
    ) -> None:
        super().__init__()
        checks = (
            (
                "num_features",
                num_features,
                isinstance(num_features, int) and num_features >= 1,
                "an integer >= 1",
            ),
            ("momentum", momentum, 0 < momentum <= 1, "a number in (0, 1]"),
            ("eps", eps, eps > 0, "a number > 0"),
            ("max_r", max_r, max_r >= 1, "a number >= 1"),
            ("max_d", max_d, max_d >= 0, "a number >= 0"),
            (
                "warmup_steps",
                warmup_steps,
                isinstance(warmup_steps, int) and warmup_steps >= 0,
                "an integer >= 0",
            ),
        )
        for name, value, ok, allowed in checks:
            if not ok:
                raise ValueError(f"BatchRenorm1d: expected {name} to be {allowed}, got {value!r}.")
        self.num_features = num_features
        self.momentum = momentum
        self.eps = eps
        self.max_r = max_r
        self.max_d = max_d
        self.warmup_steps = warmup_steps
        self.smooth = smooth
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))

    def _warmup_factor(self) -> float:
        if self.warmup_steps == 0:
            return 1.0
        done = min(int(self.num_batches_tracked), self.warmup_steps)
        if self.smooth:
            return done / self.warmup_steps
        return 1.0 if done >= self.warmup_steps else 0.0

    def forward(self, x: Tensor) -> Tensor:
        """Normalises ``x`` of shape ``[N, num_features, *rest]``."""
        if x.dim() < 2 or x.shape[1] != self.num_features:
            raise ValueError(
                f"BatchRenorm1d: expected an input of shape (N, {self.num_features}, ...), got "
                f"{tuple(x.shape)}."
            )
        shape = [1, self.num_features] + [1] * (x.dim() - 2)
        running_std = (self.running_var + self.eps).sqrt()
        if self.training:
            dims = [i for i in range(x.dim()) if i != 1]
            count = x.numel() // self.num_features
            if count < 2:
                raise ValueError(
                    f"BatchRenorm1d: expected more than one value per feature in training, got "
                    f"an input of shape {tuple(x.shape)}."
                )
            mean = x.mean(dims)
            var = x.var(dims, unbiased=False)
            std = (var + self.eps).sqrt()
            factor = self._warmup_factor()
            r = (std.detach() / running_std).clamp(1 / self.max_r, self.max_r)
            d = ((mean.detach() - self.running_mean) / running_std).clamp(-self.max_d, self.max_d)
            r = 1.0 + (r - 1.0) * factor
            d = d * factor
            y = (x - mean.view(shape)) / std.view(shape) * r.view(shape) + d.view(shape)
            with torch.no_grad():
                self.running_mean += self.momentum * (mean - self.running_mean)
                unbiased = var * count / (count - 1)
                self.running_var += self.momentum * (unbiased - self.running_var)
                self.num_batches_tracked += 1
        else:
            y = (x - self.running_mean.view(shape)) / running_std.view(shape)
        return self.weight.view(shape) * y + self.bias.view(shape)
