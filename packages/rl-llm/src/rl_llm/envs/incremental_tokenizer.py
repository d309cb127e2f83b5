"""IncrementalTokenizer: prompt token ids that only ever grow, turn after turn."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey
from rl_llm.data import History
from rl_llm.keys import HISTORY, TOKENS


class _Dialog:
    """The messages of one dialog tokenised so far: their rendered text and ids."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, str]] = []
        self.text = ""
        self.ids: list[int] = []


class IncrementalTokenizer(Transform):
    """Writes each dialog's prompt ids, tokenising only the messages added since the last call.

    Retokenising a whole rendered dialog can change the ids of earlier turns (a token may
    merge across the boundary of what was generated and what the env appended), so the
    recorded log-probs of an earlier reply no longer match its ids. This transform keeps
    the ids of every message it has seen: each new message is rendered with the chat
    template, its text (the template's rendering of the dialog up to it, minus the rendering
    before it) tokenised alone and appended; an assistant message is split after its
    header, which is tokenised as the generation prompt was. So the prompt ids of a turn
    always start with the prompt ids of the turn before. A dialog whose history no longer
    extends what was seen (a reset) starts over. Templates whose rendering of a prefix is
    not a prefix of the rendering (rare) fall back to tokenising the whole dialog.

    It runs after reset and step (on ``("history", "prompt")``) and writes left-padded
    ``[B, L]`` ids at ``("tokens", "prompt")`` (padding: the tokenizer's pad id), which a
    policy built with ``input_mode="tokens"`` reads.

    Args:
        tokenizer: a transformers tokenizer with a chat template (or ``chat_template_name``).
        chat_template_name: a registered template name (see :func:`~rl_llm.data.add_chat_template`).
        history_key: the prompt history read.
        tokens_key: where the ids go.

    Raises:
        ValueError: the tokenizer has no pad token.

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import IncrementalTokenizer
        >>> from rl_llm.testing import build_tiny_tokenizer
        >>> tok = build_tiny_tokenizer()
        >>> inc = IncrementalTokenizer(tok)
        >>> chat = [{"role": "user", "content": "hi"}]
        >>> first = inc(TensorDict(history={"prompt": History.from_chats([chat])}, batch_size=[1]))
        >>> chat += [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "ok"}]
        >>> second = inc(TensorDict(history={"prompt": History.from_chats([chat])}, batch_size=[1]))
        >>> a, b = first["tokens", "prompt"][0].tolist(), second["tokens", "prompt"][0].tolist()
        >>> b[: len(a)] == a
        True
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        chat_template_name: str | None = None,
        history_key: NestedKey = (HISTORY, "prompt"),
        tokens_key: NestedKey = (TOKENS, "prompt"),
    ) -> None:
        super().__init__(in_keys=[history_key], out_keys=[tokens_key])
        if getattr(tokenizer, "pad_token_id", None) is None:
            raise ValueError(
                "IncrementalTokenizer: expected a tokenizer with a pad token (set "
                "tokenizer.pad_token), got pad_token_id=None."
            )
        self.tokenizer = tokenizer
        self.chat_template_name = chat_template_name
        self.history_key = history_key
        self.tokens_key = tokens_key
        self._dialogs: dict[int, _Dialog] = {}
        self.retokenized = 0  # dialogs tokenised whole because the template is not prefix-stable

    def _render(self, messages: list[tuple[str, str]], generation_prompt: bool) -> str:
        if not messages:
            return ""
        chats = [[{"role": r, "content": c} for r, c in messages]]
        return History.from_chats(chats).apply_chat_template(
            self.tokenizer,
            add_generation_prompt=generation_prompt,
            chat_template_name=self.chat_template_name,
        )[0]

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []

    def prompt_ids(self, index: int, messages: list[tuple[str, str]]) -> list[int]:
        """The prompt ids (generation prompt included) of dialog ``index`` with ``messages``."""
        dialog = self._dialogs.get(index)
        if dialog is None or messages[: len(dialog.messages)] != dialog.messages:
            dialog = self._dialogs[index] = _Dialog()
        for k in range(len(dialog.messages), len(messages)):
            text = self._render(messages[: k + 1], False)
            if not text.startswith(dialog.text):
                self.retokenized += 1
                dialog = self._dialogs[index] = _Dialog()
                dialog.messages, dialog.text = list(messages), self._render(messages, False)
                dialog.ids = self._ids(dialog.text)
                break
            segment = text[len(dialog.text) :]
            if messages[k][0] == "assistant":
                header = self._render(messages[:k], True)[len(dialog.text) :] if k else ""
                if header and segment.startswith(header):
                    dialog.ids += self._ids(header)
                    segment = segment[len(header) :]
            dialog.ids += self._ids(segment)
            dialog.messages.append(messages[k])
            dialog.text = text
        with_prompt = self._render(messages, True)
        if not with_prompt.startswith(dialog.text):
            return self._ids(with_prompt)
        return dialog.ids + self._ids(with_prompt[len(dialog.text) :])

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        history = tensordict.get(self.history_key, None)
        if history is None:
            raise KeyError(
                f"IncrementalTokenizer: expected the prompt history at {self.history_key!r}; "
                f"put the transform on a ChatEnv."
            )
        chats = history.to_chats()
        if history.batch_dims == 1:
            chats = [chats]
        rows = [
            self.prompt_ids(i, [(m["role"], m["content"]) for m in chat])
            for i, chat in enumerate(chats)
        ]
        width = max((len(r) for r in rows), default=0)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        for i, row in enumerate(rows):
            if row:
                ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
        tensordict.set(self.tokens_key, ids.reshape(*tensordict.batch_size, width))
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._call(next_tensordict)

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)
