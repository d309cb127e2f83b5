"""History: a batched chat history stored as a tensorclass of roles and contents."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import tensorclass

from rl_llm.data._templates import (
    ChatTemplate,
    detect_chat_template,
    get_chat_template,
)

ROLES = ("system", "user", "assistant", "tool")


def _nested_lists(value: Any, depth: int) -> Any:
    if depth == 0:
        return value
    return [_nested_lists(item, depth - 1) for item in value]


@tensorclass
class History:
    """A chat history: one message per element of the last batch dimension.

    ``History`` is a tensorclass: it lives inside a TensorDict, indexes, stacks and concatenates
    like one. Its batch size is ``(*B, n_messages)``; every element holds a ``role`` (one of
    ``"system"``, ``"user"``, ``"assistant"``, ``"tool"``) and a ``content`` string. Histories in
    one batch have the same number of messages (chat envs step all their dialogs together).

    Examples:
        >>> from rl_llm.data import History
        >>> chats = [
        ...     [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}],
        ...     [{"role": "user", "content": "3+3?"}, {"role": "assistant", "content": "6"}],
        ... ]
        >>> history = History.from_chats(chats)
        >>> history.batch_size
        torch.Size([2, 2])
        >>> history[1, 0].content
        '3+3?'
        >>> reply = History.from_chats([[{"role": "user", "content": "ok"}]] * 2)
        >>> history.append(reply).batch_size
        torch.Size([2, 3])
        >>> print(History.from_chats(chats[:1]).apply_chat_template(
        ...     chat_template_name="chatml_format", add_generation_prompt=False)[0])
        <|im_start|>user
        2+2?<|im_end|>
        <|im_start|>assistant
        4<|im_end|>
        <BLANKLINE>
    """

    role: str
    content: str

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_chats(cls, chats: list[list[dict[str, str]]] | list[dict[str, str]]) -> History:
        """Builds a History from message dicts: one list per dialog, or one dialog.

        Args:
            chats: ``[[{"role", "content"}, ...], ...]`` (batch ``(B, n)``) or
                ``[{"role", "content"}, ...]`` (batch ``(n,)``).

        Raises:
            ValueError: the dialogs differ in length, or a message lacks a role or content, has
                an unknown role, or a content that is not a string (``5``, ``2.5``, ``None``).
        """
        single = len(chats) > 0 and isinstance(chats[0], dict)
        dialogs = [chats] if single else chats
        lengths = {len(dialog) for dialog in dialogs}
        if len(lengths) > 1:
            raise ValueError(
                f"History.from_chats: expected dialogs of one length, got lengths "
                f"{sorted(lengths)}. Pad or split the batch by length."
            )
        for i, dialog in enumerate(dialogs):
            for j, message in enumerate(dialog):
                if (
                    not isinstance(message, dict)
                    or "role" not in message
                    or "content" not in message
                ):
                    raise ValueError(
                        f"History.from_chats: message [{i}][{j}] must be a dict with 'role' and "
                        f"'content', got {message!r}."
                    )
                if message["role"] not in ROLES:
                    raise ValueError(
                        f"History.from_chats: message [{i}][{j}] has role {message['role']!r}; "
                        f"expected one of {ROLES}."
                    )
                if not isinstance(message["content"], str):
                    raise ValueError(
                        f"History.from_chats: message [{i}][{j}] has content "
                        f"{message['content']!r} of type {type(message['content']).__name__}; "
                        f"expected a str. Convert it first (e.g. str(value)) or drop the message."
                    )
        roles = [[m["role"] for m in d] for d in dialogs]
        contents = [[m["content"] for m in d] for d in dialogs]
        n = lengths.pop() if lengths else 0
        if single:
            return cls(role=roles[0], content=contents[0], batch_size=(n,))
        return cls(role=roles, content=contents, batch_size=(len(dialogs), n))

    @classmethod
    def from_text(
        cls,
        text: str | list[str],
        *,
        chat_template_name: str | None = None,
        tokenizer: Any = None,
    ) -> History:
        """Parses rendered chat text back into a History (the inverse of apply_chat_template).

        The template is ``chat_template_name`` if given, else the one detected in the
        tokenizer's ``chat_template``, else the one detected in the text itself.

        Args:
            text: one rendered dialog (batch ``(n,)``) or a list of them (batch ``(B, n)``).
            chat_template_name: a registered template name.
            tokenizer: a tokenizer whose template identifies the family.

        Raises:
            ValueError: no registered template matches.
        """
        batch = isinstance(text, list)
        texts = text if batch else [text]
        template = cls._resolve_template(chat_template_name, tokenizer, texts[0] if texts else "")
        chats = []
        for item in texts:
            messages = template.parse(item)
            # A trailing, empty, unfinished assistant turn is the generation prompt: not a message.
            if messages and not messages[-1]["is_complete"] and not messages[-1]["content"]:
                messages = messages[:-1]
            chats.append([{"role": m["role"], "content": m["content"]} for m in messages])
        return cls.from_chats(chats if batch else chats[0])

    @staticmethod
    def _resolve_template(name: str | None, tokenizer: Any, text: str) -> ChatTemplate:
        if name is not None:
            return get_chat_template(name)
        source = getattr(tokenizer, "chat_template", None) if tokenizer is not None else None
        found = detect_chat_template(source or text)
        if found is None:
            raise ValueError(
                "History: could not detect the chat template family from "
                f"{'the tokenizer' if source else 'the text'}; pass chat_template_name= "
                "(a name registered with rl_llm.data.add_chat_template)."
            )
        return found

    # ------------------------------------------------------------------ editing
    def append(self, other: History) -> History:
        """A new History with ``other``'s messages after this one's (along the message dim)."""
        if other.batch_size[:-1] != self.batch_size[:-1]:
            raise ValueError(
                f"History.append: expected a history with batch {tuple(self.batch_size[:-1])} "
                f"(plus a message dim), got {tuple(other.batch_size)}."
            )
        return torch.cat([self, other], dim=-1)

    def to_chats(self) -> Any:
        """Nested lists of ``{"role", "content"}`` dicts mirroring the batch dims."""
        roles, contents = self.role, self.content
        return _zip_nested(roles, contents, self.batch_dims)

    # ------------------------------------------------------------------ rendering
    def apply_chat_template(
        self,
        tokenizer: Any = None,
        *,
        add_generation_prompt: bool = True,
        chat_template_name: str | None = None,
        chat_template: str | None = None,
        tokenize: bool = False,
        return_assistant_tokens_mask: bool = False,
    ) -> Any:
        """Renders each dialog with a chat template.

        The template is ``chat_template`` (Jinja source), else the registered
        ``chat_template_name``, else the tokenizer's own template. Without a tokenizer the
        registered template renders the text through Jinja directly.

        Args:
            tokenizer: a transformers tokenizer, or ``None`` (text only).
            add_generation_prompt: end with the header of an assistant turn.
            chat_template_name: a registered template name.
            chat_template: a Jinja template source.
            tokenize: return token ids (the tokenizer's output dict) instead of text.
            return_assistant_tokens_mask: with ``tokenize``, add the ``assistant_masks``.

        Returns:
            A list of strings (one per dialog), or the tokenizer's output when ``tokenize``.

        Raises:
            ValueError: no template can be found, or ``tokenize`` without a tokenizer.
        """
        if self.batch_dims not in (1, 2):
            raise ValueError(
                f"History.apply_chat_template: expected batch (n,) or (B, n), got "
                f"{tuple(self.batch_size)}."
            )
        chats = self.to_chats()
        if self.batch_dims == 1:
            chats = [chats]
        chats = [[{"role": m["role"], "content": m["content"]} for m in d] for d in chats]
        source = chat_template
        if source is None and chat_template_name is not None:
            source = get_chat_template(chat_template_name).template
        if tokenizer is None:
            if tokenize:
                raise ValueError("History.apply_chat_template: tokenize=True needs a tokenizer.")
            if source is None:
                raise ValueError(
                    "History.apply_chat_template: without a tokenizer, pass chat_template= or "
                    "chat_template_name=."
                )
            return _render(source, chats, add_generation_prompt)
        if source is None and not getattr(tokenizer, "chat_template", None):
            raise ValueError(
                "History.apply_chat_template: the tokenizer has no chat_template; pass "
                "chat_template_name= (e.g. 'chatml_format') or set one with "
                "rl_llm.data.set_chat_template(tokenizer, name)."
            )
        return tokenizer.apply_chat_template(
            chats,
            chat_template=source,
            add_generation_prompt=add_generation_prompt,
            tokenize=tokenize,
            return_dict=tokenize,
            return_assistant_tokens_mask=return_assistant_tokens_mask,
        )


def _zip_nested(roles: Any, contents: Any, depth: int) -> Any:
    if depth == 0:
        return {"role": roles, "content": contents}
    return [_zip_nested(r, c, depth - 1) for r, c in zip(roles, contents)]


def _render(
    source: str, chats: list[list[dict[str, str]]], add_generation_prompt: bool
) -> list[str]:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(extensions=["jinja2.ext.do"], keep_trailing_newline=True)
    # "{% generation %}" blocks are transformers' markup for assistant masks; plain Jinja drops them.
    plain = source.replace("{% generation %}", "").replace("{% endgeneration %}", "")
    template = env.from_string(plain)
    return [template.render(messages=c, add_generation_prompt=add_generation_prompt) for c in chats]


def set_chat_template(tokenizer: Any, name: str) -> Any:
    """Gives ``tokenizer`` the registered template ``name`` (for tokenizers that lack one).

    Returns:
        The tokenizer, with ``chat_template`` set.
    """
    tokenizer.chat_template = get_chat_template(name).template
    return tokenizer
