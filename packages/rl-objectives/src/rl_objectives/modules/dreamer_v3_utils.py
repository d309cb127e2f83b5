"""DreamerV3's scalar transforms: symlog/symexp and two-hot encoding over a sorted support.

Definitions follow Hafner et al., "Mastering Diverse Domains through World Models" (DreamerV3,
https://arxiv.org/abs/2301.04104), section "Robust predictions":

- ``symlog(x) = sign(x) * ln(|x| + 1)`` and its inverse ``symexp(x) = sign(x) * (exp(|x|) - 1)``;
- ``twohot(x)``: all zeros but the two support points ``b_k <= x < b_{k+1}`` around ``x``, which
  get ``|b_{k+1} - x| / |b_{k+1} - b_k|`` and ``|b_k - x| / |b_{k+1} - b_k|``;
- a categorical prediction decodes to its expectation ``softmax(logits) @ bins``, and is
  trained by the cross-entropy with the two-hot target (:func:`two_hot_cross_entropy`);
- the support of the reward and value heads is ``symexp`` of ``num_bins`` evenly spaced points
  in ``[-20, 20]`` (255 by default, :class:`SymExpTwoHot`).
"""

from __future__ import annotations

import torch
from torch import nn

_DEFAULT_NUM_BINS = 255
_DEFAULT_BIN_RANGE = 20.0


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * log(|x| + 1)``, element-wise (any shape, dtype kept).

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import symlog
        >>> symlog(torch.tensor([-100.0, 0.0, 1.0])).tolist()  # doctest: +ELLIPSIS
        [-4.61512..., 0.0, 0.69314...]
    """
    # sign() has slope 0 at 0, symlog has slope 1 there: keep the true local gradient
    return torch.where(x == 0, x, torch.sign(x) * torch.log1p(x.abs()))


def symexp(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * (exp(|x|) - 1)``, element-wise: the inverse of :func:`symlog`.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import symexp, symlog
        >>> x = torch.tensor([-50.0, 0.0, 3.0], dtype=torch.float64)
        >>> torch.allclose(symexp(symlog(x)), x)
        True
    """
    return torch.where(x == 0, x, torch.sign(x) * torch.expm1(x.abs()))


def _check_bins(bins: torch.Tensor, where: str) -> None:
    if bins.ndim != 1 or bins.numel() < 2:
        raise ValueError(
            f"{where}: expected bins as a 1-D tensor of at least 2 ascending values, got shape "
            f"{tuple(bins.shape)}."
        )


def two_hot_encode(x: torch.Tensor, bins: torch.Tensor) -> torch.Tensor:
    """Two-hot encoding of scalars over a sorted support.

    A value between the support points ``bins[k] <= x <= bins[k + 1]`` puts weight
    ``(bins[k + 1] - x) / (bins[k + 1] - bins[k])`` on ``k`` and the rest on ``k + 1``; values
    outside the support are clamped to its ends (all weight on the first or last point).
    Encoding and :func:`two_hot_decode` of the log of the result round-trip inside the support.
    DreamerV3 applies it to ``symlog`` targets over evenly spaced bins, or equivalently to raw
    targets over ``symexp`` bins.

    Args:
        x: values, any shape ``S``.
        bins: the support, 1-D and ascending, ``(num_bins,)`` with ``num_bins >= 2``.

    Returns:
        Weights of shape ``(*S, num_bins)`` in the dtype and on the device of ``x``; each row
        sums to one.

    Raises:
        ValueError: ``bins`` is not 1-D with at least two values.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import two_hot_encode
        >>> bins = torch.tensor([-1.0, 0.0, 1.0])
        >>> two_hot_encode(torch.tensor([0.25, -3.0]), bins).tolist()
        [[0.0, 0.75, 0.25], [1.0, 0.0, 0.0]]
    """
    _check_bins(bins, "two_hot_encode")
    bins = bins.to(device=x.device, dtype=x.dtype)
    num_bins = bins.numel()
    x = x.clamp(bins[0], bins[-1])
    # index of the lower neighbour: the last support point <= x, kept below the last point
    lower = (torch.searchsorted(bins, x.contiguous(), right=True) - 1).clamp(0, num_bins - 2)
    low, high = bins[lower], bins[lower + 1]
    w_high = (x - low) / (high - low)
    out = torch.zeros((*x.shape, num_bins), dtype=x.dtype, device=x.device)
    out.scatter_(-1, lower.unsqueeze(-1), (1 - w_high).unsqueeze(-1))
    out.scatter_add_(-1, (lower + 1).unsqueeze(-1), w_high.unsqueeze(-1))
    return out


def two_hot_decode(logits: torch.Tensor, bins: torch.Tensor) -> torch.Tensor:
    """The expectation of a categorical prediction over the support: ``softmax(logits) @ bins``.

    Args:
        logits: unnormalised log-probabilities, shape ``(*S, num_bins)``.
        bins: the support, ``(num_bins,)``.

    Returns:
        The expected values, shape ``S``, in the dtype of ``logits``.

    Raises:
        ValueError: ``bins`` is not 1-D, or the last dim of ``logits`` is not ``num_bins``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import two_hot_decode, two_hot_encode
        >>> bins = torch.linspace(-2.0, 2.0, 5, dtype=torch.float64)
        >>> target = torch.tensor([0.3, -1.7], dtype=torch.float64)
        >>> two_hot_decode(two_hot_encode(target, bins).log(), bins).tolist()
        [0.3, -1.7]
    """
    _check_bins(bins, "two_hot_decode")
    if logits.ndim == 0 or logits.shape[-1] != bins.numel():
        raise ValueError(
            f"two_hot_decode: expected logits whose last dim is the number of bins "
            f"({bins.numel()}), got shape {tuple(logits.shape)}."
        )
    bins = bins.to(device=logits.device, dtype=logits.dtype)
    return (torch.softmax(logits, dim=-1) * bins).sum(-1)


def two_hot_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, bins: torch.Tensor
) -> torch.Tensor:
    """Cross-entropy of a categorical prediction with the two-hot encoding of raw targets:
    ``-sum_k two_hot_encode(target, bins)_k * log_softmax(logits)_k``.

    Args:
        logits: ``(*S, num_bins)``.
        target: raw values, ``S`` or ``(*S, 1)``.
        bins: the support, ``(num_bins,)``.

    Returns:
        The unreduced loss, shape ``S``.

    Raises:
        ValueError: ``target`` is neither ``S`` nor ``(*S, 1)``, or ``bins`` does not match.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import two_hot_cross_entropy
        >>> loss = two_hot_cross_entropy(torch.zeros(2, 3), torch.tensor([-0.5, 0.5]),
        ...                              torch.tensor([-1.0, 0.0, 1.0]))
        >>> [round(x, 4) for x in loss.tolist()]  # log(3): uniform prediction
        [1.0986, 1.0986]
    """
    if target.shape == (*logits.shape[:-1], 1):
        target = target.squeeze(-1)
    if target.shape != logits.shape[:-1]:
        raise ValueError(
            f"two_hot_cross_entropy: expected target of shape {tuple(logits.shape[:-1])} or "
            f"{(*logits.shape[:-1], 1)} (the logits' without the bins dim), got "
            f"{tuple(target.shape)}."
        )
    if bins.ndim != 1 or logits.shape[-1] != bins.numel():
        raise ValueError(
            f"two_hot_cross_entropy: expected logits whose last dim is the number of bins "
            f"({bins.numel()}), got shape {tuple(logits.shape)}."
        )
    encoded = two_hot_encode(target, bins).to(logits.dtype)
    return -(encoded * torch.log_softmax(logits, dim=-1)).sum(-1)


def _symexp_bins(
    num_bins: int = _DEFAULT_NUM_BINS,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """DreamerV3's support: ``symexp`` of ``num_bins`` evenly spaced points in ``[-20, 20]``,
    exactly antisymmetric (computed in float64, then cast to ``dtype``); TorchRL's default
    bins of the reward and value heads."""
    if not isinstance(num_bins, int) or isinstance(num_bins, bool) or num_bins < 2:
        raise ValueError(f"SymExpTwoHot: expected num_bins as an int >= 2, got {num_bins!r}.")
    grid = torch.linspace(-_DEFAULT_BIN_RANGE, _DEFAULT_BIN_RANGE, num_bins, dtype=torch.float64)
    bins = symexp(grid)
    bins = (bins - bins.flip(0)) / 2  # the same magnitude on both sides, 0 in the middle
    return bins.to(device=device, dtype=dtype or torch.get_default_dtype())


class SymExpTwoHot(nn.Module):
    """DreamerV3's categorical representation of a scalar over ``symexp`` bins.

    ``encode`` two-hot encodes raw targets, ``decode`` (and ``forward``, which keeps a trailing
    dim of 1) gives the expectation of logits, ``loss`` the two-hot cross-entropy. A reward or
    value head outputs ``num_bins`` logits and decodes them with this module.

    Args:
        num_bins: size of the support. Defaults to 255.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import SymExpTwoHot
        >>> two_hot = SymExpTwoHot(num_bins=5)
        >>> target = torch.tensor([-10.0, 0.0, 10.0])
        >>> torch.allclose(two_hot.decode(two_hot.encode(target).log()), target, atol=1e-3)
        True
        >>> two_hot(torch.zeros(4, 5)).shape
        torch.Size([4, 1])
    """

    def __init__(self, num_bins: int = _DEFAULT_NUM_BINS) -> None:
        super().__init__()
        self.num_bins = num_bins
        self.register_buffer("bins", _symexp_bins(num_bins))

    def encode(self, target: torch.Tensor) -> torch.Tensor:
        """Two-hot weights ``(*S, num_bins)`` of raw targets ``S``."""
        return two_hot_encode(target, self.bins)

    def decode(self, logits: torch.Tensor) -> torch.Tensor:
        """The expectations ``S`` of logits ``(*S, num_bins)``."""
        return two_hot_decode(logits, self.bins)

    def loss(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """:func:`two_hot_cross_entropy` over this support."""
        return two_hot_cross_entropy(logits, target, self.bins)

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        """The expectations with a trailing dim of 1: ``(*S, num_bins) -> (*S, 1)``."""
        return self.decode(logits).unsqueeze(-1)


__all__ = [
    "SymExpTwoHot",
    "symexp",
    "symlog",
    "two_hot_cross_entropy",
    "two_hot_decode",
    "two_hot_encode",
]
