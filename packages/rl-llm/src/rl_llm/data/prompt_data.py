"""PromptData: tokenised prompt + label rows, with where each prompt ends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorClass

from rl_llm.data.tokenizers import PromptTensorDictTokenizer


class PromptData(TensorClass["nocast"]):
    """Rows of ``prompt + label`` tokens (``[N, L]``) and each prompt's last index.

    Fields: ``input_ids``, ``attention_mask``, ``prompt_rindex`` (``[N]``, the index of the
    prompt's last token), and optionally ``labels``, ``logits``, ``loss``.

    Examples:
        >>> from rl_llm.data import PromptData
        >>> from rl_llm.testing import build_tiny_tokenizer
        >>> tok = build_tiny_tokenizer()
        >>> data = PromptData.from_texts(["Q: 1+1?"], [" A: 2"], tok, max_length=16)
        >>> prompt_only = data.mask_label(pad_token_id=tok.pad_token_id)
        >>> tok.decode(prompt_only.input_ids[0][prompt_only.attention_mask[0].bool()])
        'Q: 1+1?'
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    prompt_rindex: torch.Tensor
    labels: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    loss: torch.Tensor | None = None

    @classmethod
    def from_texts(
        cls,
        prompts: Sequence[str],
        labels: Sequence[str],
        tokenizer: Any,
        *,
        max_length: int = 550,
    ) -> PromptData:
        """Tokenises the pairs with :class:`PromptTensorDictTokenizer`; ``labels`` holds the
        ids of the whole rows (the targets of a language-model loss)."""
        td = PromptTensorDictTokenizer(tokenizer, max_length)(
            {"prompt": list(prompts), "label": list(labels)}
        )
        return cls(
            input_ids=td["input_ids"],
            attention_mask=td["attention_mask"],
            prompt_rindex=td["prompt_rindex"],
            labels=td["input_ids"].clone(),
            batch_size=td.batch_size,
        )

    def mask_label(self, pad_token_id: int) -> PromptData:
        """The prompts alone: positions after ``prompt_rindex`` become ``pad_token_id`` and
        leave the attention mask."""
        width = self.input_ids.shape[-1]
        keep = torch.arange(width, device=self.input_ids.device) <= self.prompt_rindex.unsqueeze(-1)
        return type(self)(
            input_ids=self.input_ids.masked_fill(~keep, pad_token_id),
            attention_mask=self.attention_mask * keep.to(self.attention_mask.dtype),
            prompt_rindex=self.prompt_rindex,
            loss=self.loss,
            batch_size=self.batch_size,
        )
