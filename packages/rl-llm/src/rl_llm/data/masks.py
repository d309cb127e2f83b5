"""Masks: which token positions are real and which were written by the assistant."""

from __future__ import annotations

import torch
from tensordict import tensorclass


@tensorclass
class Masks:
    """Boolean masks over ``Tokens.full``, batch ``(B,)``.

    ``all_attention_mask`` is True on real tokens (not padding) and ``all_assistant_mask`` on
    the tokens the assistant produced (the response: prompt tokens are always False).

    Examples:
        >>> import torch
        >>> from rl_llm.data import Masks
        >>> masks = Masks(all_attention_mask=torch.tensor([[False, True, True, True]]),
        ...     all_assistant_mask=torch.tensor([[False, False, False, True]]), batch_size=(1,))
        >>> int(masks.all_assistant_mask.sum())
        1
    """

    all_attention_mask: torch.Tensor | None = None
    all_assistant_mask: torch.Tensor | None = None
