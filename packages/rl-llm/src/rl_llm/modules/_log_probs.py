"""Pure tensor helpers shared by the LLM policies and losses."""

from __future__ import annotations

import torch


def response_mask(response: torch.Tensor, eos_token_id: int | list[int] | None) -> torch.Tensor:
    """True on generated tokens up to and including the first end-of-sequence token.

    Args:
        response: ``[B, Lr]`` generated ids (padded after the end of sequence).
        eos_token_id: the id (or ids) that end a sequence, or ``None``.

    Returns:
        A bool tensor ``[B, Lr]``.
    """
    if eos_token_id is None:
        return torch.ones_like(response, dtype=torch.bool)
    eos = torch.as_tensor(eos_token_id, device=response.device).reshape(-1)
    is_eos = torch.isin(response, eos)
    # Positions strictly after the first eos are padding.
    after = (is_eos.cumsum(-1) - is_eos.long()) > 0
    return ~after


def gather_log_probs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """``log_softmax(logits)[..., tokens]``: the log-probability of each token.

    Args:
        logits: ``[B, L, V]`` scores of the token at each position.
        tokens: ``[B, L]`` ids.

    Returns:
        ``[B, L]`` float log-probabilities.
    """
    log_z = torch.logsumexp(logits, dim=-1)
    return logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) - log_z


def position_ids_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counted over real tokens only (what ``generate`` uses with left padding)."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def masked_mean(value: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of ``value`` over the True entries of ``mask`` (along ``dim`` or over all)."""
    mask = mask.to(value.dtype)
    if dim is None:
        return (value * mask).sum() / mask.sum().clamp(min=1.0)
    return (value * mask).sum(dim) / mask.sum(dim).clamp(min=1.0)
