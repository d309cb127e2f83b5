"""TensorDictTokenizer and PromptTensorDictTokenizer: text batches to padded id TensorDicts."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict


def _strings(sample: Any, key: str, where: str) -> list[str]:
    try:
        texts = sample[key]
    except (KeyError, TypeError):
        raise KeyError(f"{where}: expected the texts at {key!r} in the sample.") from None
    texts = [texts] if isinstance(texts, str) else list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise ValueError(
            f"{where}: expected strings at {key!r}, got {type(texts[bad[0]]).__name__} at "
            f"index {bad[0]}."
        )
    return texts


class TensorDictTokenizer:
    """Tokenises a batch of texts (``sample[key]``) into ``input_ids`` and ``attention_mask``.

    Rows are padded on the right to ``max_length`` (``padding="max_length"``) or to the longest
    row (``padding="longest"``) and cut at ``max_length`` with ``truncation``; no special tokens
    are added. Returns a TensorDict of batch ``[N]`` (on ``device``), or the tokenizer's dict
    with ``return_tensordict=False``.

    Args:
        tokenizer: a transformers tokenizer with a pad token.
        max_length: the sequence length.
        key: where the texts are in the sample.
        padding: ``"max_length"`` or ``"longest"``.
        truncation: cut rows longer than ``max_length``.
        return_tensordict: return a TensorDict (else a dict of lists).
        device: the TensorDict's device.

    Raises:
        ValueError: ``max_length < 1`` or another ``padding``; texts that are not strings.
        KeyError: the sample has no ``key``.

    Examples:
        >>> from rl_llm.data import TensorDictTokenizer
        >>> from rl_llm.testing import build_tiny_tokenizer
        >>> out = TensorDictTokenizer(build_tiny_tokenizer(), 8)({"text": ["hello world", "ok"]})
        >>> out["input_ids"].shape, out["attention_mask"].sum(-1).tolist()[1] > 0
        (torch.Size([2, 8]), True)
    """

    def __init__(
        self,
        tokenizer: Any,
        max_length: int,
        key: str = "text",
        padding: str = "max_length",
        truncation: bool = True,
        return_tensordict: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        if max_length < 1 or padding not in ("max_length", "longest"):
            raise ValueError(
                f"{type(self).__name__}: expected max_length >= 1 and padding 'max_length' or "
                f"'longest', got max_length={max_length}, padding={padding!r}."
            )
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.key = key
        self.padding = padding
        self.truncation = truncation
        self.return_tensordict = return_tensordict
        self.device = device

    def _encode(self, texts: list[str]) -> dict[str, Any]:
        return self.tokenizer(
            texts,
            max_length=self.max_length,
            padding=self.padding,
            truncation=self.truncation,
            padding_side="right",
            add_special_tokens=False,
        )

    def _finish(self, fields: dict[str, Any], n: int) -> Any:
        if not self.return_tensordict:
            return fields
        tensors = {k: torch.as_tensor(v) for k, v in fields.items()}
        return TensorDict(tensors, batch_size=[n], device=self.device)

    def __call__(self, sample: Any) -> Any:
        texts = _strings(sample, self.key, type(self).__name__)
        enc = self._encode(texts)
        return self._finish(
            {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}, len(texts)
        )


class PromptTensorDictTokenizer(TensorDictTokenizer):
    """Tokenises ``prompt + label`` pairs (``sample[key]``, ``sample["label"]``).

    Writes ``input_ids`` and ``attention_mask`` of the joined texts, ``prompt_rindex`` (the
    index of each prompt's last token in them) and ``valid_sample`` (the joined text fits in
    ``max_length`` tokens uncut). Arguments as :class:`TensorDictTokenizer` (``key`` defaults
    to ``"prompt"``).

    Raises:
        ValueError: as :class:`TensorDictTokenizer`, or as many labels as prompts are missing.

    Examples:
        >>> from rl_llm.data import PromptTensorDictTokenizer
        >>> from rl_llm.testing import build_tiny_tokenizer
        >>> tok = build_tiny_tokenizer()
        >>> out = PromptTensorDictTokenizer(tok, 32)({"prompt": ["Sum: 1+2"], "label": [" is 3"]})
        >>> rindex = out["prompt_rindex"][0].item()
        >>> tok.decode(out["input_ids"][0, : rindex + 1]), out["valid_sample"].tolist()
        ('Sum: 1+2', [True])
    """

    def __init__(
        self,
        tokenizer: Any,
        max_length: int,
        key: str = "prompt",
        padding: str = "max_length",
        truncation: bool = True,
        return_tensordict: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(
            tokenizer,
            max_length,
            key=key,
            padding=padding,
            truncation=truncation,
            return_tensordict=return_tensordict,
            device=device,
        )

    def __call__(self, sample: Any) -> Any:
        where = type(self).__name__
        prompts = _strings(sample, self.key, where)
        labels = _strings(sample, "label", where)
        if len(labels) != len(prompts):
            raise ValueError(
                f"{where}: expected one label per prompt, got {len(labels)} labels for "
                f"{len(prompts)} prompts."
            )
        joined = [p + lab for p, lab in zip(prompts, labels)]
        enc = self._encode(joined)
        prompt_ids = self.tokenizer(prompts, add_special_tokens=False)["input_ids"]
        full_ids = self.tokenizer(joined, add_special_tokens=False)["input_ids"]
        fields = {
            "input_ids": enc["input_ids"],
            "attention_mask": enc["attention_mask"],
            "prompt_rindex": [min(len(p), self.max_length) - 1 for p in prompt_ids],
            "valid_sample": [len(f) <= self.max_length for f in full_ids],
        }
        return self._finish(fields, len(prompts))
