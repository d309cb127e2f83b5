"""DreamerV3's scalar transforms: symlog/symexp and two-hot encoding over a sorted support.

Definitions follow Hafner et al., "Mastering Diverse Domains through World Models" (DreamerV3,
https://arxiv.org/abs/2301.04104), section "Robust predictions":

- ``symlog(x) = sign(x) * ln(|x| + 1)`` and its inverse ``symexp(x) = sign(x) * (exp(|x|) - 1)``;
- ``twohot(x)``: all zeros but the two support points ``b_k <= x < b_{k+1}`` around ``x``, which
  get ``|b_{k+1} - x| / |b_{k+1} - b_k|`` and ``|b_k - x| / |b_{k+1} - b_k|``;
- a categorical prediction decodes to its expectation ``softmax(logits) @ bins``.
"""

from __future__ import annotations

import torch


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * log(|x| + 1)``, element-wise (any shape, dtype kept).

    Examples:
        >>> import torch
        >>> from rl_core.modules import symlog
        >>> symlog(torch.tensor([-100.0, 0.0, 1.0])).tolist()  # doctest: +ELLIPSIS
        [-4.61512..., 0.0, 0.69314...]
    """
    return torch.sign(x) * torch.log1p(x.abs())


def symexp(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * (exp(|x|) - 1)``, element-wise: the inverse of :func:`symlog`.

    Examples:
        >>> import torch
        >>> from rl_core.modules import symexp, symlog
        >>> x = torch.tensor([-50.0, 0.0, 3.0], dtype=torch.float64)
        >>> torch.allclose(symexp(symlog(x)), x)
        True
    """
    return torch.sign(x) * torch.expm1(x.abs())


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
        >>> from rl_core.modules import two_hot_encode
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
        >>> from rl_core.modules import two_hot_decode, two_hot_encode
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


__all__ = ["symexp", "symlog", "two_hot_decode", "two_hot_encode"]
