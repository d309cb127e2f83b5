"""LLMMaskedCategorical: a categorical over a vocabulary at each position, with masks."""

from __future__ import annotations

import torch
from torch import distributions as D


class LLMMaskedCategorical(D.Distribution):
    """Token distributions of a sequence, with positions (or tokens) masked out.

    ``logits`` is ``[*B, T, C]`` (``C`` the vocabulary). ``mask`` is ``[*B, T]`` (a position is
    scored or not: prompt and padding positions are False) or ``[*B, T, C]`` (the tokens
    allowed at each position; a position with none is masked as a whole).

    - :meth:`log_prob` of ``[*B, T]`` tokens: ``log softmax`` of the allowed logits at the
      token; 0 at masked positions and where the token is ``ignore_index`` (the usual
      cross-entropy convention, so sums over a sequence count only scored tokens); ``-inf``
      for a token the mask forbids.
    - :meth:`sample` and :attr:`mode` draw only allowed tokens and give ``ignore_index`` at
      masked positions; :meth:`entropy` is the entropy over the allowed tokens, 0 at masked
      positions.

    Args:
        logits: ``[*B, T, C]`` unnormalised log-probabilities.
        mask: ``[*B, T]`` or ``[*B, T, C]`` bool.
        ignore_index: the token value of masked positions.

    Raises:
        ValueError: ``mask`` has neither shape, or a token is out of range.

    Examples:
        >>> import torch
        >>> from rl_llm.modules import LLMMaskedCategorical
        >>> logits = torch.zeros(1, 3, 4)
        >>> dist = LLMMaskedCategorical(logits, torch.tensor([[False, True, True]]))
        >>> dist.log_prob(torch.tensor([[-100, 2, 1]])).tolist()
        [[0.0, -1.3862943649291992, -1.3862943649291992]]
        >>> dist.sample()[0, 0].item()
        -100
    """

    arg_constraints: dict = {}  # noqa: RUF012  (torch.distributions' class attribute)

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor, ignore_index: int = -100) -> None:
        if logits.ndim < 2:
            raise ValueError(
                f"LLMMaskedCategorical: expected logits of shape [*B, T, C], got "
                f"{tuple(logits.shape)}."
            )
        mask = mask.bool()
        if mask.shape == logits.shape[:-1]:
            self._token_mask = None
            self._positions = mask
        elif mask.shape == logits.shape:
            self._token_mask = mask
            self._positions = mask.any(-1)
        else:
            raise ValueError(
                f"LLMMaskedCategorical: expected a mask of shape {tuple(logits.shape[:-1])} "
                f"(positions) or {tuple(logits.shape)} (tokens), got {tuple(mask.shape)}."
            )
        self._logits = logits
        self.ignore_index = ignore_index
        super().__init__(batch_shape=logits.shape[:-1], validate_args=False)

    @property
    def logits(self) -> torch.Tensor:
        """The logits as given."""
        return self._logits

    @property
    def mask(self) -> torch.Tensor:
        """``[*B, T]`` bool: the positions that are scored."""
        return self._positions

    @property
    def position_level_masking(self) -> bool:
        """Whether the mask was given per position (else per token)."""
        return self._token_mask is None

    @property
    def masked_logits(self) -> torch.Tensor:
        """The logits with forbidden tokens at ``-inf`` (masked positions left as given)."""
        if self._token_mask is None:
            return self._logits
        allowed = self._token_mask | ~self._positions.unsqueeze(-1)
        return self._logits.masked_fill(~allowed, float("-inf"))

    def _log_softmax(self) -> torch.Tensor:
        return torch.log_softmax(self.masked_logits, dim=-1)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        if value.shape != self.batch_shape:
            raise ValueError(
                f"LLMMaskedCategorical.log_prob: expected tokens of shape "
                f"{tuple(self.batch_shape)}, got {tuple(value.shape)}."
            )
        scored = self._positions & (value != self.ignore_index)
        tokens = value.masked_fill(~scored, 0)
        vocab = self._logits.shape[-1]
        if bool(((tokens < 0) | (tokens >= vocab)).any()):
            raise ValueError(
                f"LLMMaskedCategorical.log_prob: expected token ids in [0, {vocab}) or "
                f"ignore_index={self.ignore_index}, got values outside."
            )
        lp = self._log_softmax().gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        return lp.masked_fill(~scored, 0.0)

    def sample(self, sample_shape: torch.Size | tuple[int, ...] = ()) -> torch.Tensor:
        with torch.no_grad():
            logits = self.masked_logits.masked_fill(~self._positions.unsqueeze(-1), 0.0)
            drawn = D.Categorical(logits=logits).sample(torch.Size(sample_shape))
            return drawn.masked_fill(~self._positions.expand_as(drawn), self.ignore_index)

    @property
    def mode(self) -> torch.Tensor:
        best = self.masked_logits.argmax(-1)
        return best.masked_fill(~self._positions, self.ignore_index)

    def entropy(self) -> torch.Tensor:
        lp = self._log_softmax()
        terms = torch.where(torch.isfinite(lp), lp.exp() * lp, torch.zeros_like(lp))
        return (-terms.sum(-1)).masked_fill(~self._positions, 0.0)
