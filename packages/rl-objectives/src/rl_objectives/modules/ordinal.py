"""Distributions over an ordered finite set: :class:`Ordinal` and :class:`OneHotOrdinal`
(Tang & Agrawal, "Discretizing Continuous Action Space for On-Policy Optimization", 2020)."""

from __future__ import annotations

from torch import Tensor
from torch import distributions as D
from torch.nn import functional as F

from rl_core.modules import OneHotCategorical

__all__ = ["Ordinal", "OneHotOrdinal", "ordinal_logits"]


def ordinal_logits(scores: Tensor) -> Tensor:
    """The ordinal parametrisation's unnormalised log-probabilities (Tang & Agrawal 2020, Eq. 4).

    With ``s_j`` the scores of the ``N`` atoms, atom ``k`` gets
    ``sum_{j <= k} log sigmoid(s_j) + sum_{j > k} log(1 - sigmoid(s_j))``: each atom's score is
    the log-probability of "at least this far", so neighbouring atoms share most of their terms
    and the distribution knows the atoms' order.

    Args:
        scores: ``[*B, N]`` real scores (a network's output).

    Returns:
        ``[*B, N]`` logits (not normalised; a ``Categorical`` normalises them).

    Raises:
        ValueError: ``scores`` is not a floating tensor with at least one dimension.
    """
    if not isinstance(scores, Tensor) or not scores.is_floating_point() or scores.dim() < 1:
        got = (
            f"{scores.dtype} of shape {tuple(scores.shape)}"
            if isinstance(scores, Tensor)
            else type(scores).__name__
        )
        raise ValueError(
            f"Ordinal: expected scores to be a floating tensor of shape (*B, N), got {got}."
        )
    at_least = F.logsigmoid(scores).cumsum(-1)
    below = F.logsigmoid(-scores)
    beyond = below.flip(-1).cumsum(-1).flip(-1) - below  # sum over j > k
    return at_least + beyond


class Ordinal(D.Categorical):
    """A categorical distribution over ``N`` ordered atoms in the ordinal parametrisation.

    ``Categorical(logits=ordinal_logits(scores))``: samples are atom indices ``[*B]``. Useful
    for a policy over a discretised continuous action, where the atoms' order matters.

    Args:
        scores: ``[*B, N]`` scores (see :func:`ordinal_logits`).

    Raises:
        ValueError: ``scores`` is not a floating tensor of shape ``(*B, N)``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import Ordinal
        >>> dist = Ordinal(scores=torch.zeros(3))
        >>> [round(p, 4) for p in dist.probs.tolist()]
        [0.3333, 0.3333, 0.3333]
        >>> dist.sample((5,)).shape
        torch.Size([5])
    """

    def __init__(self, scores: Tensor) -> None:
        super().__init__(logits=ordinal_logits(scores))


class OneHotOrdinal(OneHotCategorical):
    """The one-hot version of :class:`Ordinal`: samples are one-hot vectors ``[*B, N]``.

    Args:
        scores: ``[*B, N]`` scores (see :func:`ordinal_logits`).

    Raises:
        ValueError: ``scores`` is not a floating tensor of shape ``(*B, N)``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import OneHotOrdinal
        >>> dist = OneHotOrdinal(scores=torch.tensor([5.0, -5.0, -5.0]))
        >>> dist.mode.tolist()
        [1.0, 0.0, 0.0]
    """

    def __init__(self, scores: Tensor) -> None:
        super().__init__(logits=ordinal_logits(scores))
