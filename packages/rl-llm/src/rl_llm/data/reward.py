"""RewardData and PairwiseDataset: tokenised preference pairs for reward-model training."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorClass


class RewardData(TensorClass["nocast"]):
    """Tokenised responses: ``input_ids`` and ``attention_mask`` (``[B, L]``), and optionally
    the model's per-token ``rewards`` and per-sequence ``end_scores``."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    rewards: torch.Tensor | None = None
    end_scores: torch.Tensor | None = None


class PairwiseDataset(TensorClass["nocast"]):
    """Preference pairs: the ``chosen_data`` and ``rejected_data`` of each prompt.

    Build it from texts with :meth:`from_pairs` (TorchRL's ``from_dataset`` downloads a hub
    data set, which this package does not do: load the rows yourself and pass them).
    ``dataset.to_tensordict()`` gives the ``chosen_data``/``rejected_data`` sub-TensorDicts
    that :class:`~rl_llm.objectives.RewardModelLoss` reads (``set_keys(chosen="chosen_data",
    rejected="rejected_data")``).

    Examples:
        >>> from rl_llm.data import PairwiseDataset
        >>> from rl_llm.testing import build_tiny_tokenizer
        >>> tok = build_tiny_tokenizer()
        >>> data = PairwiseDataset.from_pairs(["Q: 1+1? A:"], [" 2"], [" 3"], tok, max_length=16)
        >>> data.batch_size, data.chosen_data.input_ids.shape[0]
        (torch.Size([1]), 1)
    """

    chosen_data: RewardData
    rejected_data: RewardData

    @classmethod
    def from_pairs(
        cls,
        prompts: Sequence[str],
        chosen: Sequence[str],
        rejected: Sequence[str],
        tokenizer: Any,
        *,
        max_length: int = 550,
    ) -> PairwiseDataset:
        """Tokenises ``prompt + chosen`` and ``prompt + rejected`` (right padding, cut at
        ``max_length`` tokens).

        Raises:
            ValueError: the three sequences differ in length, or are empty, or an entry is
                not a string, or ``max_length < 1``.
        """
        n = len(prompts)
        if not n or len(chosen) != n or len(rejected) != n or max_length < 1:
            raise ValueError(
                f"PairwiseDataset.from_pairs: expected as many prompts, chosen and rejected "
                f"texts (at least one) and max_length >= 1, got {n}, {len(chosen)}, "
                f"{len(rejected)} and max_length={max_length}."
            )
        for name, texts in (("prompts", prompts), ("chosen", chosen), ("rejected", rejected)):
            bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
            if bad:
                raise ValueError(
                    f"PairwiseDataset.from_pairs: expected strings in {name}, got "
                    f"{type(texts[bad[0]]).__name__} at index {bad[0]}."
                )

        def encode(texts: list[str]) -> RewardData:
            enc = tokenizer(
                texts,
                max_length=max_length,
                truncation=True,
                padding="max_length",
                padding_side="right",
                return_tensors="pt",
                add_special_tokens=False,
            )
            return RewardData(
                input_ids=enc["input_ids"],
                attention_mask=enc["attention_mask"].bool(),
                batch_size=[n],
            )

        return cls(
            chosen_data=encode([p + c for p, c in zip(prompts, chosen)]),
            rejected_data=encode([p + r for p, r in zip(prompts, rejected)]),
            batch_size=[n],
        )
