"""XMLBlockParser and JSONCallParser: the tool calls of a reply, malformed ones reported.

Both are total: any reply parses, in time linear in its length; a call that cannot be read
(bad JSON, no name, arguments that are not an object, too long, too many calls) is returned
as a :class:`ToolCall` with ``error`` set, so the env reports it to the model instead of
raising.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rl_llm.envs.tool_registry import ParseResult, ToolCall, valid_tool_name

_ATTR = re.compile(r'(\w+)\s*=\s*"([^"]*)"')
_OPEN, _CLOSE = "<tool", "</tool>"
_MAX_TAG_CHARS = 512


def _check_limits(max_calls: int, max_body_chars: int, where: str) -> None:
    if max_calls < 1 or max_body_chars < 1:
        raise ValueError(
            f"{where}: expected max_calls >= 1 and max_body_chars >= 1, got max_calls="
            f"{max_calls}, max_body_chars={max_body_chars}."
        )


def _json_args(body: str, max_body_chars: int) -> tuple[dict[str, Any], str | None]:
    """The arguments object of a call body, or ``({}, why not)``."""
    if len(body) > max_body_chars:
        return {}, f"arguments longer than {max_body_chars} characters ({len(body)})"
    if not body:
        return {}, None
    try:
        args = json.loads(body)
    except json.JSONDecodeError as err:
        return {}, f"arguments are not JSON ({err.msg} at character {err.pos})"
    except (ValueError, RecursionError) as err:
        return {}, f"arguments are not readable JSON ({type(err).__name__})"
    if not isinstance(args, dict):
        return {}, f"arguments must be a JSON object, got {type(args).__name__}"
    return args, None


class XMLBlockParser:
    """Reads ``<tool name="NAME" tag="TAG">{json arguments}</tool>`` blocks, in order.

    ``tag`` is optional, the body may be empty (no arguments). The blocks are removed from the
    returned ``text``. A block without a valid ``name``, with a body that is not a JSON
    object, or without ``</tool>`` is returned as an error call; after ``max_calls`` calls the
    rest of the reply is left unparsed and one more error call says so.

    Args:
        max_calls: the most calls read from one reply.
        max_body_chars: the longest body read as arguments.

    Examples:
        >>> from rl_llm.envs import XMLBlockParser
        >>> out = XMLBlockParser()('<tool name="add" tag="A">{"a": 1, "b": 2}</tool> Done.')
        >>> out["text"], out["calls"][0].tool, out["calls"][0].args, out["calls"][0].tag
        ('Done.', 'add', {'a': 1, 'b': 2}, 'A')
        >>> XMLBlockParser()('<tool name="add">{"a": 1,</tool>')["calls"][0].error
        'arguments are not JSON (Expecting property name enclosed in double quotes at character 8)'
    """

    def __init__(self, *, max_calls: int = 16, max_body_chars: int = 100_000) -> None:
        _check_limits(max_calls, max_body_chars, "XMLBlockParser")
        self.max_calls = max_calls
        self.max_body_chars = max_body_chars

    def __call__(self, response: str | dict[str, Any]) -> ParseResult:
        text = response if isinstance(response, str) else str(response.get("text", ""))
        calls: list[ToolCall] = []
        kept: list[str] = []
        i = 0
        while True:
            start = text.find(_OPEN, i)
            if start < 0:
                kept.append(text[i:])
                break
            if len(calls) >= self.max_calls:
                calls.append(
                    ToolCall(
                        "?", error=f"more than {self.max_calls} tool calls; the rest were not run"
                    )
                )
                kept.append(text[i:])
                break
            head_start = start + len(_OPEN)
            if text[head_start : head_start + 1] not in (" ", "\t", "\n", "\r", ">"):
                kept.append(text[i:head_start])  # "<tools>", "<toolbox>": not a tool block
                i = head_start
                continue
            gt = text.find(">", head_start, head_start + _MAX_TAG_CHARS)
            if gt < 0:
                calls.append(ToolCall("?", error="malformed <tool ...> tag: no '>' closes it"))
                kept.append(text[i:head_start])
                i = head_start
                continue
            close = text.find(_CLOSE, gt + 1)
            attrs = dict(_ATTR.findall(text[head_start:gt]))
            name = attrs.get("name", "?")
            if close < 0:
                calls.append(
                    ToolCall(name, tag=attrs.get("tag"), error="no </tool> closes the block")
                )
                kept.append(text[i:])
                break
            if not valid_tool_name(name):
                error = 'malformed <tool> tag: expected name="<tool name>"'
                call = ToolCall(name[:64], tag=attrs.get("tag"), error=error)
            else:
                args, error = _json_args(text[gt + 1 : close].strip(), self.max_body_chars)
                call = ToolCall(name, args, attrs.get("tag"), error)
            calls.append(call)
            kept.append(text[i:start])
            i = close + len(_CLOSE)
        return ParseResult(text="".join(kept).strip(), calls=calls, meta={"count": len(calls)})


class JSONCallParser:
    """Reads a reply that is one JSON object ``{"message": ..., "tools": [...]}``.

    Each entry of ``"tools"`` is ``{"tool": NAME, "args": {...}, "tag": TAG}`` (``args`` and
    ``tag`` optional). A reply that is not a JSON object is plain text with no call; a reply
    that starts with ``{`` but is not valid JSON, a ``"tools"`` that is not a list and an
    entry that is not a valid call are returned as error calls.

    Args:
        max_calls: the most calls read from one reply.
        max_body_chars: the longest reply parsed as JSON.

    Examples:
        >>> from rl_llm.envs import JSONCallParser
        >>> out = JSONCallParser()('{"message": "Adding.", "tools": [{"tool": "add", "args": {"a": 1}}]}')
        >>> out["text"], out["calls"][0].tool, out["calls"][0].args
        ('Adding.', 'add', {'a': 1})
        >>> JSONCallParser()('{"tools": [{"args": {}}]}')["calls"][0].error
        'tools[0]: expected "tool": a tool name, got None'
    """

    def __init__(self, *, max_calls: int = 16, max_body_chars: int = 100_000) -> None:
        _check_limits(max_calls, max_body_chars, "JSONCallParser")
        self.max_calls = max_calls
        self.max_body_chars = max_body_chars

    def __call__(self, response: str | dict[str, Any]) -> ParseResult:
        if isinstance(response, str):
            text = response.strip()
            if not text.startswith("{"):
                return ParseResult(text=response, calls=[], meta={"count": 0})
            data, error = _json_args(text, self.max_body_chars)
            if error is not None:
                call = ToolCall("?", error=f"the reply is not a JSON call object: {error}")
                return ParseResult(text=response, calls=[call], meta={"count": 1})
        elif isinstance(response, dict):
            data = response
        else:
            call = ToolCall(
                "?", error=f"expected a reply string or dict, got {type(response).__name__}"
            )
            return ParseResult(text="", calls=[call], meta={"count": 1})
        message = data.get("message", "")
        entries = data.get("tools", [])
        calls: list[ToolCall] = []
        if not isinstance(entries, list):
            calls.append(
                ToolCall("?", error=f'"tools" must be a list, got {type(entries).__name__}')
            )
            entries = []
        for k, entry in enumerate(entries):
            if len(calls) >= self.max_calls:
                calls.append(
                    ToolCall(
                        "?", error=f"more than {self.max_calls} tool calls; the rest were not run"
                    )
                )
                break
            calls.append(self._call(k, entry))
        text = message if isinstance(message, str) else json.dumps(message, default=str)
        return ParseResult(text=text, calls=calls, meta={"count": len(calls)})

    @staticmethod
    def _call(k: int, entry: object) -> ToolCall:
        if not isinstance(entry, dict):
            return ToolCall(
                "?", error=f"tools[{k}]: expected an object, got {type(entry).__name__}"
            )
        name, args, tag = entry.get("tool"), entry.get("args", {}), entry.get("tag")
        if not valid_tool_name(name):
            shown = name[:64] if isinstance(name, str) else name
            return ToolCall("?", error=f'tools[{k}]: expected "tool": a tool name, got {shown!r}')
        if not isinstance(args, dict):
            return ToolCall(
                name, error=f'tools[{k}]: expected "args": an object, got {type(args).__name__}'
            )
        return ToolCall(name, args, tag if isinstance(tag, str) else None)
