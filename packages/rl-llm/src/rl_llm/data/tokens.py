"""Tokens: token ids of the prompt, the response and both, as padded tensors."""

from __future__ import annotations

import torch
from tensordict import tensorclass


@tensorclass
class Tokens:
    """Token ids of one generation step, batch ``(B,)``, padded with the pad token id.

    ``prompt`` is ``[B, Lp]`` left-padded, ``response`` is ``[B, Lr]`` right-padded, ``full``
    is their concatenation ``[B, Lp + Lr]``. The masks in :class:`~rl_llm.data.Masks` say which
    positions are real tokens.

    Examples:
        >>> import torch
        >>> from rl_llm.data import Tokens
        >>> tokens = Tokens(prompt=torch.tensor([[0, 5, 6]]), response=torch.tensor([[7, 0]]),
        ...     batch_size=(1,))
        >>> tokens.response.shape
        torch.Size([1, 2])
    """

    prompt: torch.Tensor | None = None
    response: torch.Tensor | None = None
    full: torch.Tensor | None = None
