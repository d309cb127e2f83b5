"""Categorical policies over discrete actions, with optional action masks.

- :class:`OneHotCategorical`: one-hot actions, with ``mode``/``deterministic_sample`` and an
  optional reparameterised sample (:class:`ReparamGradientStrategy`).
- :class:`MaskedCategorical`: index actions; masked-out actions have probability 0.
- :class:`MaskedOneHotCategorical`: one-hot actions with the same masking.
"""

from __future__ import annotations

import math
from enum import StrEnum

import torch
from torch import distributions as D

from rl_core.modules.distributions._checks import validating

_size = torch.Size
_NO_SAMPLE_SHAPE = torch.Size()


class ReparamGradientStrategy(StrEnum):
    """How :meth:`OneHotCategorical.rsample` passes gradients to the logits.

    - ``PassThrough``: the sample is an exact one-hot vector; its gradient is the gradient of
      ``probs`` (the straight-through estimator: ``sample + probs - probs.detach()``).
    - ``RelaxedOneHot``: a Gumbel-softmax sample, a point of the simplex rather than a one-hot
      vector, differentiable in the logits (temperature set on the distribution).
    """

    PassThrough = "pass_through"
    RelaxedOneHot = "relaxed_one_hot"


def _masked_logits(
    owner: str,
    logits: torch.Tensor | None,
    probs: torch.Tensor | None,
    mask: torch.Tensor | None,
    indices: torch.Tensor | None,
    padding_value: int | None,
    neg_inf: float,
    validate: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns ``(logits with masked entries set to neg_inf, dense boolean mask)``."""
    if (logits is None) == (probs is None):
        raise ValueError(f"{owner}: pass exactly one of logits and probs, got both or neither.")
    if (mask is None) == (indices is None):
        raise ValueError(
            f"{owner}: pass exactly one of mask (dense, boolean) and indices (sparse, the valid "
            f"action indices), got both or neither."
        )
    if logits is None:
        logits = probs.log()
    n = logits.shape[-1]
    if indices is not None:
        if indices.dtype.is_floating_point or indices.dtype == torch.bool:
            raise TypeError(f"{owner}: indices must be an integer tensor, got {indices.dtype}.")
        valid = (
            torch.ones_like(indices, dtype=torch.bool)
            if padding_value is None
            else indices != padding_value
        )
        if validate and bool(((indices < 0) | (indices >= n))[valid].any()):
            raise ValueError(
                f"{owner}: indices must lie in [0, {n}) except for padding_value="
                f"{padding_value}, got {indices.tolist()}. Pad with padding_value."
            )
        batch = torch.broadcast_shapes(indices.shape[:-1], logits.shape[:-1])
        safe = torch.where(valid, indices, torch.zeros_like(indices))
        safe = safe.expand(*batch, indices.shape[-1])
        counts = torch.zeros(*batch, n, dtype=torch.long, device=logits.device)
        counts.scatter_add_(-1, safe, valid.expand_as(safe).long())
        mask = counts > 0
    elif mask.dtype != torch.bool:
        raise TypeError(
            f"{owner}: mask must be a boolean tensor, got {mask.dtype}. Use mask.bool() or pass "
            f"indices for the sparse form."
        )
    elif mask.shape[-1:] != logits.shape[-1:]:
        raise ValueError(
            f"{owner}: mask must end with the number of actions {n}, got shape "
            f"{tuple(mask.shape)}. Give one flag per action."
        )
    if validate and not bool(mask.any(-1).all()):
        raise ValueError(
            f"{owner}: every row of the mask needs at least one valid action, got a row with "
            f"none. Check the action mask of the environment."
        )
    masked = torch.where(mask, logits, torch.full_like(logits, neg_inf))
    return masked, mask.expand_as(masked)


class OneHotCategorical(D.OneHotCategorical):
    """A categorical distribution over one-hot action vectors.

    :class:`torch.distributions.OneHotCategorical` with the attributes the exploration types
    read, and an optional reparameterised sample:

    - ``RANDOM``: :meth:`rsample` (a one-hot vector; see ``grad_method``), or :meth:`sample`
      when ``grad_method=None``.
    - ``DETERMINISTIC`` and ``MODE``: the one-hot vector of the most likely action.
    - ``MEAN``: ``probs``, the expected one-hot vector (a soft action, not a one-hot one; with
      argument validation on, its ``log_prob`` raises, as it lies outside the support).

    Args:
        logits: unnormalised log-probabilities, shape ``[*batch, n]``.
        probs: probabilities (normalised along the last dimension), exclusive with ``logits``.

    Keyword Args:
        grad_method: the :class:`ReparamGradientStrategy` of :meth:`rsample`, or ``None`` for
            no reparameterised sample. Defaults to ``PassThrough``.
        temperature: temperature of the ``RelaxedOneHot`` sample. Defaults to ``1.0``.
        validate_args: forwarded to :class:`torch.distributions.Distribution`.

    Raises:
        ValueError: both or neither of ``logits`` and ``probs`` are given.

    Examples:
        >>> import torch
        >>> from rl_core.modules.distributions import OneHotCategorical
        >>> dist = OneHotCategorical(logits=torch.tensor([[0.0, 2.0, 1.0]]))
        >>> print(dist.mode)
        tensor([[0., 1., 0.]])
        >>> print(dist.rsample().sum(-1))
        tensor([1.])
    """

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        *,
        grad_method: ReparamGradientStrategy | str | None = ReparamGradientStrategy.PassThrough,
        temperature: float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        if (logits is None) == (probs is None):
            raise ValueError(
                f"{type(self).__name__}: pass exactly one of logits and probs, got both or neither."
            )
        self.grad_method = None if grad_method is None else ReparamGradientStrategy(grad_method)
        self.has_rsample = self.grad_method is not None
        self.temperature = temperature
        super().__init__(probs=probs, logits=logits, validate_args=validate_args)

    @property
    def deterministic_sample(self) -> torch.Tensor:
        """The mode: the action of ``ExplorationType.DETERMINISTIC``."""
        return self.mode

    def rsample(
        self, sample_shape: torch.Size | tuple[int, ...] = _NO_SAMPLE_SHAPE
    ) -> torch.Tensor:
        """A differentiable sample, as set by ``grad_method``.

        Args:
            sample_shape: leading shape of the samples. Defaults to ``()``.

        Returns:
            Samples of shape ``[*sample_shape, *batch, n]``.

        Raises:
            ValueError: the distribution was built with ``grad_method=None``.
        """
        if self.grad_method is None:
            raise ValueError(
                f"{type(self).__name__}.rsample: built with grad_method=None. Pass "
                f"grad_method=ReparamGradientStrategy.PassThrough (or RelaxedOneHot), or call "
                f"sample()."
            )
        if self.grad_method is ReparamGradientStrategy.RelaxedOneHot:
            relaxed = D.RelaxedOneHotCategorical(
                torch.as_tensor(self.temperature, dtype=self.logits.dtype),
                logits=self.logits,
                validate_args=False,
            )
            return relaxed.rsample(sample_shape)
        hard = self.sample(sample_shape)
        return hard + (self.probs - self.probs.detach())


class MaskedCategorical(D.Categorical):
    """A categorical distribution over action indices in which some actions are forbidden.

    Masked-out actions get the logit ``neg_inf``: with the default ``-inf`` their probability
    is exactly 0, they are never sampled, their :meth:`log_prob` is ``-inf``, and they add
    nothing to the entropy. With a finite ``neg_inf`` (say ``-1e9``) probabilities are still 0
    after the softmax in float32, and ``log_prob`` of a masked action is a large negative
    number instead of ``-inf``. The mask comes either dense (``mask``, one flag per action) or
    sparse (``indices``, the valid actions of each row, padded with ``padding_value`` where rows
    have fewer). Masks may differ from row to row.

    Values picked under each exploration type:

    - ``RANDOM``: :meth:`sample` (never a masked action).
    - ``DETERMINISTIC`` and ``MODE``: the most likely valid action.
    - ``MEAN``: raises ``ValueError``; unordered actions have no mean.

    Args:
        logits: unnormalised log-probabilities, shape ``[*batch, n]``.
        probs: probabilities, exclusive with ``logits``.

    Keyword Args:
        mask: boolean tensor broadcastable to ``[*batch, n]``, ``True`` for allowed actions.
        indices: integer tensor ``[*batch, k]`` of allowed actions, exclusive with ``mask``.
        padding_value: the value that pads ``indices``; such entries are ignored. Defaults to
            ``None`` (no padding).
        neg_inf: the logit given to masked actions. Defaults to ``-inf``.
        validate_args: forwarded to :class:`torch.distributions.Distribution`; when on, rows
            without any valid action and out-of-range indices raise.

    Raises:
        ValueError: both or neither of ``logits``/``probs`` or of ``mask``/``indices``; a mask
            of the wrong width; with validation on, a row without valid actions or an index
            out of range.
        TypeError: a non-boolean ``mask`` or non-integer ``indices``.

    Examples:
        >>> import torch
        >>> from rl_core.modules.distributions import MaskedCategorical
        >>> mask = torch.tensor([[True, False, True], [False, True, False]])
        >>> dist = MaskedCategorical(logits=torch.zeros(2, 3), mask=mask)
        >>> print(dist.probs)
        tensor([[0.5000, 0.0000, 0.5000],
                [0.0000, 1.0000, 0.0000]])
        >>> print(dist.log_prob(torch.tensor([1, 1])))
        tensor([-inf, 0.])
        >>> sparse = MaskedCategorical(
        ...     logits=torch.zeros(2, 3), indices=torch.tensor([[0, 2], [1, -1]]), padding_value=-1
        ... )
        >>> print(torch.equal(sparse.mask, mask))
        True
    """

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        *,
        mask: torch.Tensor | None = None,
        indices: torch.Tensor | None = None,
        padding_value: int | None = None,
        neg_inf: float = -math.inf,
        validate_args: bool | None = None,
    ) -> None:
        masked, self.mask = _masked_logits(
            type(self).__name__,
            logits,
            probs,
            mask,
            indices,
            padding_value,
            neg_inf,
            validating(validate_args),
        )
        self.neg_inf = neg_inf
        super().__init__(logits=masked, validate_args=validate_args)

    @property
    def mean(self) -> torch.Tensor:
        """Undefined for unordered actions: raises ``ValueError``."""
        raise ValueError(
            f"{type(self).__name__}.mean: the actions are unordered categories and have no "
            f"mean. Use ExplorationType.MODE or DETERMINISTIC, or MaskedOneHotCategorical, "
            f"whose mean is the vector of probabilities."
        )

    @property
    def deterministic_sample(self) -> torch.Tensor:
        """The mode (most likely valid action): the action of ``ExplorationType.DETERMINISTIC``."""
        return self.mode


class MaskedOneHotCategorical(OneHotCategorical):
    """A categorical distribution over one-hot actions in which some actions are forbidden.

    The one-hot counterpart of :class:`MaskedCategorical` (same ``mask``/``indices`` arguments
    and the same guarantees: masked actions have probability 0, are never sampled, have
    ``log_prob`` ``-inf`` and no share of the entropy) with the sampling options of
    :class:`OneHotCategorical`. Under ``MEAN`` it gives the masked ``probs``.

    Arguments (and errors) as for :class:`MaskedCategorical`, plus ``grad_method`` (defaults to
    ``PassThrough``) and ``temperature`` (``1.0``) of :class:`OneHotCategorical`.

    Examples:
        >>> import torch
        >>> from rl_core.modules.distributions import MaskedOneHotCategorical
        >>> logits = torch.tensor([[3.0, 0.0, 1.0]])
        >>> dist = MaskedOneHotCategorical(logits=logits, mask=torch.tensor([[False, True, True]]))
        >>> print(dist.mode)
        tensor([[0., 0., 1.]])
        >>> print(dist.log_prob(torch.tensor([[1.0, 0.0, 0.0]])))
        tensor([-inf])
    """

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        *,
        mask: torch.Tensor | None = None,
        indices: torch.Tensor | None = None,
        padding_value: int | None = None,
        neg_inf: float = -math.inf,
        grad_method: ReparamGradientStrategy | str | None = ReparamGradientStrategy.PassThrough,
        temperature: float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        masked, self.mask = _masked_logits(
            type(self).__name__,
            logits,
            probs,
            mask,
            indices,
            padding_value,
            neg_inf,
            validating(validate_args),
        )
        self.neg_inf = neg_inf
        super().__init__(
            logits=masked,
            grad_method=grad_method,
            temperature=temperature,
            validate_args=validate_args,
        )
