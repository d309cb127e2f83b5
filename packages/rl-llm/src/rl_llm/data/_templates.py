"""Chat templates: a registry of Jinja templates with their inverse parsers and detection markers.

A template renders a list of ``{"role", "content"}`` messages to text; its inverse parser reads
such text back into messages. Assistant turns are wrapped in ``{% generation %}`` blocks so that
transformers can return an assistant-token mask.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Messages = list[dict[str, str]]

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\n' }}{% generation %}{{ message['content'] + '<|im_end|>' }}"
    "{% endgeneration %}{{ '\n' }}"
    "{% else %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

LLAMA3_TEMPLATE = (
    "{{ '<|begin_of_text|>' }}"
    "{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' }}"
    "{% if message['role'] == 'assistant' %}"
    "{% generation %}{{ message['content'] + '<|eot_id|>' }}{% endgeneration %}"
    "{% else %}{{ message['content'] + '<|eot_id|>' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

_CHATML_TURN = re.compile(r"<\|im_start\|>(\w+)\n(.*?)(<\|im_end\|>|$)", re.DOTALL)
_LLAMA3_TURN = re.compile(
    r"<\|start_header_id\|>(\w+)<\|end_header_id\|>\n\n(.*?)(<\|eot_id\|>|$)", re.DOTALL
)


def _parser(pattern: re.Pattern[str]) -> Callable[[str], Messages]:
    def parse(text: str) -> Messages:
        return [
            {"role": role, "content": content, "is_complete": end != ""}
            for role, content, end in pattern.findall(text)
        ]

    return parse


@dataclass(frozen=True)
class ChatTemplate:
    """A registered template: its Jinja source, the parser of its output, and its markers."""

    name: str
    template: str
    parse: Callable[[str], Messages]
    markers: tuple[str, ...]


_REGISTRY: dict[str, ChatTemplate] = {}


def add_chat_template(
    name: str,
    template: str,
    *,
    inverse_parser: Callable[[str], Messages],
    markers: tuple[str, ...],
) -> None:
    """Registers a chat template so History can render and parse it by name.

    Args:
        name: the template name (``chat_template_name=`` of :meth:`History.apply_chat_template`).
        template: the Jinja source, rendering ``messages`` and ``add_generation_prompt``.
        inverse_parser: reads rendered text back into ``[{"role", "content", "is_complete"}]``.
        markers: substrings that identify the family in a tokenizer's template or a text.

    Raises:
        ValueError: ``markers`` is empty.

    Examples:
        >>> from rl_llm.data import add_chat_template, History
        >>> import re
        >>> turn = re.compile(r"\\[(\\w+)\\] (.*?)\\n")
        >>> add_chat_template(
        ...     "brackets",
        ...     "{% for m in messages %}{{ '[' + m['role'] + '] ' + m['content'] + '\\n' }}{% endfor %}",
        ...     inverse_parser=lambda t: [
        ...         {"role": r, "content": c, "is_complete": True} for r, c in turn.findall(t)
        ...     ],
        ...     markers=("[user] ",),
        ... )
        >>> list(History.from_text("[user] hi\\n[assistant] yo\\n").role)
        ['user', 'assistant']
    """
    if not markers:
        raise ValueError(
            f"add_chat_template({name!r}): expected at least one marker string to detect the "
            f"template by, got none."
        )
    _REGISTRY[name] = ChatTemplate(name, template, inverse_parser, tuple(markers))


def get_chat_template(name: str) -> ChatTemplate:
    """The registered template ``name``; a ValueError lists the known names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"chat template {name!r} is not registered; known: {sorted(_REGISTRY)}. Register it "
            f"with rl_llm.data.add_chat_template."
        ) from None


def detect_chat_template(text: str) -> ChatTemplate | None:
    """The registered template whose markers occur in ``text`` (a template or a rendering)."""
    for entry in reversed(list(_REGISTRY.values())):
        if any(marker in text for marker in entry.markers):
            return entry
    return None


add_chat_template(
    "chatml_format",
    CHATML_TEMPLATE,
    inverse_parser=_parser(_CHATML_TURN),
    markers=("<|im_start|>",),
)
add_chat_template(
    "llama3",
    LLAMA3_TEMPLATE,
    inverse_parser=_parser(_LLAMA3_TURN),
    markers=("<|start_header_id|>",),
)
