"""Tokenizer: a transform that turns strings into token ids (and ids back into strings)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey
from rl_llm._utils import as_strings


def _mask_key(key: NestedKey) -> NestedKey:
    if isinstance(key, str):
        return f"{key}_attention_mask"
    return (*key[:-1], f"{key[-1]}_attention_mask")


class Tokenizer(Transform):
    """Tokenises string entries into padded id tensors; the inverse decodes ids to strings.

    Forward (after reset and step): each ``in_keys`` entry (one string per row) becomes a
    ``[B, L]`` id tensor at the matching ``out_keys`` entry (padded on ``padding_side`` with
    the tokenizer's pad id) and, with ``return_attention_mask``, a bool mask at the same key
    suffixed ``_attention_mask``. Inverse (before step): each ``in_keys_inv`` id tensor is
    decoded (pad ids dropped) into strings at ``out_keys_inv``, so a token-mode policy can
    drive a text env such as :class:`~rl_llm.envs.LLMEnv`.

    Args:
        in_keys: string entries to tokenise (default ``["query"]``).
        out_keys: where the ids go (default ``["tokens_query"]``... one per in key).
        in_keys_inv: id entries to decode before a step.
        out_keys_inv: where the decoded strings go.
        tokenizer: a transformers tokenizer.
        add_special_tokens: passed to the tokenizer (default False).
        skip_special_tokens: drop special tokens when decoding (default True).
        padding_side: ``"left"`` (default) or ``"right"``.
        return_attention_mask: also write the masks (default True).

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_llm.envs import Tokenizer
        >>> from rl_llm.testing import build_tiny_tokenizer
        >>> tok = build_tiny_tokenizer()
        >>> t = Tokenizer(tokenizer=tok)
        >>> td = t(TensorDict(query=["hello world", "ok"], batch_size=[2]))
        >>> td["tokens_query"].shape[0], td["tokens_query_attention_mask"].dtype
        (2, torch.bool)
        >>> tok.batch_decode([ids[m] for ids, m in zip(td["tokens_query"],
        ...     td["tokens_query_attention_mask"])])
        ['hello world', 'ok']
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        tokenizer: Any = None,
        add_special_tokens: bool = False,
        skip_special_tokens: bool = True,
        padding_side: str = "left",
        return_attention_mask: bool = True,
    ) -> None:
        if tokenizer is None:
            raise ValueError(
                "Tokenizer: expected a tokenizer (a transformers tokenizer), got None."
            )
        if padding_side not in ("left", "right"):
            raise ValueError(
                f"Tokenizer: expected padding_side 'left' or 'right', got {padding_side!r}."
            )
        in_keys = list(in_keys) if in_keys is not None else ["query"]
        if out_keys is None:
            out_keys = [
                f"tokens_{k}" if isinstance(k, str) else (*k[:-1], f"tokens_{k[-1]}")
                for k in in_keys
            ]
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        self.tokenizer = tokenizer
        self.add_special_tokens = add_special_tokens
        self.skip_special_tokens = skip_special_tokens
        self.padding_side = padding_side
        self.return_attention_mask = return_attention_mask

    def encode(self, strings: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``([B, L] ids, [B, L] bool mask)`` of ``strings``."""
        enc = self.tokenizer(
            strings,
            return_tensors="pt",
            padding=True,
            padding_side=self.padding_side,
            add_special_tokens=self.add_special_tokens,
        )
        return enc["input_ids"], enc["attention_mask"].bool()

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict.get(in_key, None)
            if value is None:
                continue
            ids, mask = self.encode(as_strings(value))
            tensordict.set(out_key, ids)
            if self.return_attention_mask:
                tensordict.set(_mask_key(out_key), mask)
        return tensordict

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        pad = self.tokenizer.pad_token_id
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            ids = tensordict.get(in_key, None)
            if ids is None:
                raise KeyError(f"Tokenizer: expected token ids at {in_key!r} before the step.")
            rows = [[t for t in row.tolist() if t != pad] for row in ids]
            tensordict.set(
                out_key,
                self.tokenizer.batch_decode(rows, skip_special_tokens=self.skip_special_tokens),
            )
        return tensordict
