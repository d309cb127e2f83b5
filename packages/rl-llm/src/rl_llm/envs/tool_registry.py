"""The tool-calling contract: services, the registry that names them, and parsed calls."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, runtime_checkable

_NAME = re.compile(r"[A-Za-z_][\w.-]{0,63}")


def valid_tool_name(name: object) -> bool:
    """Whether ``name`` is a tool name: a letter or ``_``, then up to 63 of ``[\\w.-]``."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


@runtime_checkable
class ToolService(Protocol):
    """A tool: a named callable taking keyword arguments and returning a dict.

    ``schema_in`` and ``schema_out`` describe the arguments and the result (names to types or
    descriptions); they are documentation for the model's prompt, not checked here.
    """

    name: str
    schema_in: dict[str, Any]
    schema_out: dict[str, Any]

    def __call__(self, **kwargs: Any) -> dict[str, Any]: ...


@dataclass
class ToolCall:
    """One tool call parsed from a reply.

    Attributes:
        tool: the tool's name, as written.
        args: the keyword arguments.
        tag: an optional label the model gave the call (echoed in the result).
        error: why the call could not be parsed (then it is reported, never run).
    """

    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    tag: str | None = None
    error: str | None = None


class ParseResult(TypedDict):
    """A parsed reply: ``text`` without the tool blocks, ``calls`` in order, ``meta``."""

    text: str
    calls: list[ToolCall]
    meta: dict[str, Any]


class LLMToolParser(Protocol):
    """Reads the tool calls of a reply (:class:`XMLBlockParser`, :class:`JSONCallParser`)."""

    def __call__(self, response: str | dict[str, Any]) -> ParseResult: ...


class ToolRegistry:
    """The tools an env offers, by name.

    Args:
        services: the initial services (each with a unique, valid ``name``).

    Raises:
        TypeError: a service is not callable or has no string ``name``.
        ValueError: a name is invalid or registered twice.

    Examples:
        >>> from rl_llm.envs import ToolRegistry
        >>> class Add:
        ...     name, schema_in, schema_out = "add", {"a": int, "b": int}, {"result": int}
        ...     def __call__(self, a, b):
        ...         return {"result": a + b}
        >>> registry = ToolRegistry([Add()])
        >>> "add" in registry, registry.get("add")(a=1, b=2)
        (True, {'result': 3})
    """

    def __init__(self, services: Sequence[ToolService] = ()) -> None:
        self._services: dict[str, ToolService] = {}
        for service in services:
            self.register(service)

    def register(self, service: ToolService) -> None:
        """Adds ``service`` under its ``name``."""
        name = getattr(service, "name", None)
        if not callable(service) or not isinstance(name, str):
            raise TypeError(
                f"ToolRegistry.register: expected a callable with a string `name`, got "
                f"{type(service).__name__} (name={name!r})."
            )
        if not valid_tool_name(name):
            raise ValueError(
                f"ToolRegistry.register: expected a tool name of a letter or '_' then up to 63 "
                f"letters, digits, '_', '.', '-', got {name!r}."
            )
        if name in self._services:
            raise ValueError(
                f"ToolRegistry.register: a tool named {name!r} is already registered; give the "
                f"new one another name."
            )
        self._services[name] = service

    def get(self, name: str) -> ToolService:
        """The service called ``name``.

        Raises:
            KeyError: no such tool (the message lists the known ones).
        """
        service = self._services.get(name)
        if service is None:
            raise KeyError(
                f"unknown tool {name!r}; known tools: {', '.join(self.names()) or 'none'}"
            )
        return service

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._services)

    def __contains__(self, name: object) -> bool:
        return name in self._services

    def __len__(self) -> int:
        return len(self._services)
