"""Concatenates generation steps whose prompts and responses have different lengths."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase

from rl_llm.keys import LOG_PROBS, MASKS, REF_LOG_PROBS, TOKENS


def _pad(x: torch.Tensor, width: int, *, left: bool, value: float | bool | int) -> torch.Tensor:
    extra = width - x.shape[-1]
    if extra == 0:
        return x
    return F.pad(x, (extra, 0) if left else (0, extra), value=value)


def pad_and_cat(steps: list[TensorDictBase], pad_token_id: int) -> TensorDictBase:
    """``torch.cat`` of steps after padding token entries to common widths.

    Prompt-side entries are left-padded, response-side entries right-padded (ids with
    ``pad_token_id``, masks with False, log-probs with 0), so every row keeps the layout a
    generating policy writes: ``full == cat(prompt, response)``.
    """
    if len(steps) == 1:
        return steps[0]
    if any(s.get((TOKENS, "response"), None) is None for s in steps):
        return torch.cat(steps)
    lp = max(s.get((TOKENS, "prompt")).shape[-1] for s in steps)
    lr = max(s.get((TOKENS, "response")).shape[-1] for s in steps)
    padded = []
    for s in steps:
        s = s.copy()
        p_w = s.get((TOKENS, "prompt")).shape[-1]
        tokens = s.get(TOKENS).clone(False)
        tokens.prompt = _pad(tokens.prompt, lp, left=True, value=pad_token_id)
        tokens.response = _pad(tokens.response, lr, left=False, value=pad_token_id)
        tokens.full = torch.cat([tokens.prompt, tokens.response], -1)
        s.set(TOKENS, tokens)
        masks = s.get(MASKS, None)
        if masks is not None:
            masks = masks.clone(False)
            for name in ("all_attention_mask", "all_assistant_mask"):
                m = getattr(masks, name)
                if m is not None:
                    head = _pad(m[:, :p_w], lp, left=True, value=False)
                    tail = _pad(m[:, p_w:], lr, left=False, value=False)
                    setattr(masks, name, torch.cat([head, tail], -1))
            s.set(MASKS, masks)
        log_probs = s.get(LOG_PROBS, None)
        if log_probs is not None and log_probs.response is not None:
            log_probs = log_probs.clone(False)
            log_probs.response = _pad(log_probs.response, lr, left=False, value=0.0)
            log_probs.full = None
            s.set(LOG_PROBS, log_probs)
        ref = s.get(REF_LOG_PROBS, None)
        if ref is not None:
            s.set(REF_LOG_PROBS, _pad(ref, lr, left=False, value=0.0))
        padded.append(s)
    return torch.cat(padded)
