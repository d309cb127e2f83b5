"""GPT2RewardModel: a GPT-2 transformer with a scalar head, scoring each sequence."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from rl_llm.modules._log_probs import position_ids_from_mask


def last_token_index(attention_mask: torch.Tensor) -> torch.Tensor:
    """``[B]`` index of each row's last real token (left or right padding)."""
    width = attention_mask.shape[-1]
    flipped = attention_mask.flip(-1).long().argmax(-1)
    return (width - 1) - flipped


class GPT2RewardModel(nn.Module):
    """A reward model: GPT-2's transformer and a linear head giving one score per token.

    ``forward(input_ids, attention_mask)`` returns ``(rewards, end_scores)``: the ``[B, L]``
    per-token scores and the ``[B]`` score at each sequence's last real token (the reward of
    the sequence; left and right padding both work). Wrap it for :class:`RewardModelLoss`
    with ``TensorDictModule(model, in_keys=["input_ids", "attention_mask"],
    out_keys=["rewards", "score"])``.

    Args:
        model_path: a folder (or hub id) of a GPT-2 checkpoint whose transformer is loaded;
            ``None`` builds a fresh one from ``config``.
        config: a ``transformers.GPT2Config`` for a fresh model (default: GPT-2's).

    Raises:
        ImportError: transformers is missing (``pip install "rl-llm[transformers]"``).

    Examples:
        >>> import torch
        >>> from transformers import GPT2Config
        >>> from rl_llm.modules import GPT2RewardModel
        >>> model = GPT2RewardModel(config=GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50))
        >>> rewards, end = model(torch.tensor([[5, 6, 7], [0, 8, 9]]),
        ...     torch.tensor([[1, 1, 1], [0, 1, 1]], dtype=torch.bool))
        >>> rewards.shape, end.shape
        (torch.Size([2, 3]), torch.Size([2]))
    """

    def __init__(self, model_path: str | None = None, *, config: Any = None) -> None:
        super().__init__()
        try:
            from transformers import GPT2Config, GPT2Model
        except ImportError as err:  # pragma: no cover - the extra is installed in tests
            raise ImportError(
                'GPT2RewardModel needs transformers: pip install "rl-llm[transformers]"'
            ) from err
        if model_path is not None:
            self.transformer = GPT2Model.from_pretrained(model_path)
        else:
            self.transformer = GPT2Model(config if config is not None else GPT2Config())
        self.config = self.transformer.config
        self.lm_head = nn.Linear(self.config.n_embd, 1, bias=False)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids, dtype=torch.bool)
        attention_mask = attention_mask.bool()
        hidden = self.transformer(
            input_ids=input_ids,
            attention_mask=attention_mask.long(),
            position_ids=position_ids_from_mask(attention_mask),
        ).last_hidden_state
        rewards = self.lm_head(hidden).squeeze(-1)
        end = last_token_index(attention_mask)
        end_scores = rewards.gather(-1, end.unsqueeze(-1)).squeeze(-1)
        return rewards, end_scores
