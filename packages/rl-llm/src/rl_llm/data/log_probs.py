"""LogProbs: per-token log-probabilities of the response (and of every full-sequence token)."""

from __future__ import annotations

import torch
from tensordict import tensorclass


@tensorclass
class LogProbs:
    """Per-token log-probabilities, batch ``(B,)``.

    ``response`` is ``[B, Lr]`` aligned with ``Tokens.response`` (0 at padding); ``full`` is
    ``[B, Lp + Lr]`` aligned with ``Tokens.full`` (0 at padding and at the first position,
    which has no context).

    Examples:
        >>> import torch
        >>> from rl_llm.data import LogProbs
        >>> lp = LogProbs(response=torch.tensor([[-0.5, -1.0]]), batch_size=(1,))
        >>> lp.response.sum().item()
        -1.5
    """

    response: torch.Tensor | None = None
    full: torch.Tensor | None = None
