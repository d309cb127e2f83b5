"""ExecuteToolsInOrder: runs the tool calls of each reply, in order, and reports every result."""

from __future__ import annotations

import inspect
import json
import threading
from typing import Any

from tensordict import TensorDictBase

from rl_core import Transform
from rl_llm.envs._tool_utils import append_tool_messages, last_replies
from rl_llm.envs.tool_registry import LLMToolParser, ToolCall, ToolRegistry, ToolService


def _accepts_state(service: ToolService) -> bool:
    try:
        params = inspect.signature(service).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "_state" or p.kind is p.VAR_KEYWORD for p in params)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[output cut to {limit} characters]"


class ExecuteToolsInOrder(Transform):
    """A ChatEnv transform that runs the tool calls of each last reply in order of appearance.

    After each step, ``parser`` reads every dialog's last message; each call runs on the
    service of its name in ``registry``, one after the other, and one ``tool`` message with
    a line per call (``[k] name (tag T): {json result}`` or ``[k] name: error: ...``) is
    appended to the dialog's history, so the next turn sees the results. Nothing a reply
    contains makes the step raise: a call the parser could not read, an unknown tool,
    arguments the tool refuses, an exception, a result that is not JSON, a call that runs
    past its time and output beyond ``max_output_chars`` are all reported in the message.

    Limits: each call gets ``timeout`` seconds (a service with a ``max_call_seconds``
    attribute, such as :class:`PythonExecutorService`, enforces its own limit and gets that
    long); a call still running then is reported as timed out and abandoned (a Python
    function cannot be stopped from outside: it runs on in a daemon thread, and its service
    refuses new calls until it returns; give untrusted code to :class:`PythonExecutorService`,
    whose runs the kernel stops). Each call's text is cut to ``max_output_chars``.

    Args:
        registry: the tools.
        parser: reads the calls of a reply (:class:`XMLBlockParser`, :class:`JSONCallParser`).
        stop_on_error: skip the calls after the first that fails (they are reported).
        pass_state_to_tools: pass ``_state={"index": i, "history": [...messages]}`` to the
            services that accept a ``_state`` (or ``**kwargs``) argument.
        timeout: seconds a call may run.
        max_output_chars: the longest text kept per call.
        tool_role: the role of the appended messages.

    Raises:
        TypeError: ``registry`` is not a :class:`ToolRegistry` or ``parser`` is not callable.
        ValueError: ``timeout`` or ``max_output_chars`` is not positive.

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_core import TransformedEnv
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import ChatEnv, ExecuteToolsInOrder, ToolRegistry, XMLBlockParser
        >>> class Add:
        ...     name, schema_in, schema_out = "add", {"a": int, "b": int}, {"result": int}
        ...     def __call__(self, a, b):
        ...         return {"result": a + b}
        >>> env = TransformedEnv(ChatEnv(batch_size=(1,)),
        ...     ExecuteToolsInOrder(ToolRegistry([Add()]), XMLBlockParser()))
        >>> td = env.reset(TensorDict(query=["3+4?"], batch_size=[1]))
        >>> reply = '<tool name="add">{"a": 3, "b": 4}</tool><tool name="mul">{}</tool>'
        >>> td["history"].full = td["history"].prompt.append(
        ...     History.from_chats([[{"role": "assistant", "content": reply}]]))
        >>> print(env.step(td)["next", "history"].prompt[0, -1].content)
        [1] add: {"result": 7}
        [2] mul: error: unknown tool 'mul'; known tools: add
    """

    def __init__(
        self,
        registry: ToolRegistry,
        parser: LLMToolParser,
        stop_on_error: bool = False,
        pass_state_to_tools: bool = True,
        *,
        timeout: float = 10.0,
        max_output_chars: int = 4000,
        tool_role: str = "tool",
    ) -> None:
        super().__init__()
        if not isinstance(registry, ToolRegistry):
            raise TypeError(
                f"ExecuteToolsInOrder: expected registry to be a ToolRegistry, got "
                f"{type(registry).__name__}."
            )
        if not callable(parser):
            raise TypeError(
                f"ExecuteToolsInOrder: expected a callable parser (XMLBlockParser(), "
                f"JSONCallParser()), got {type(parser).__name__}."
            )
        if not timeout > 0 or max_output_chars < 1:
            raise ValueError(
                f"ExecuteToolsInOrder: expected timeout > 0 and max_output_chars >= 1, got "
                f"timeout={timeout}, max_output_chars={max_output_chars}."
            )
        self.registry = registry
        self.parser = parser
        self.stop_on_error = stop_on_error
        self.pass_state_to_tools = pass_state_to_tools
        self.timeout = float(timeout)
        self.max_output_chars = max_output_chars
        self.tool_role = tool_role
        self._abandoned: dict[str, threading.Thread] = {}

    def _invoke(self, service: ToolService, kwargs: dict[str, Any]) -> tuple[Any, str | None]:
        """``(result, None)`` or ``(None, error)``; waits at most the call's time limit."""
        name = service.name
        previous = self._abandoned.get(name)
        if previous is not None and previous.is_alive():
            return None, "the tool is still running a previous call that timed out; not run"
        self._abandoned.pop(name, None)
        box: dict[str, Any] = {}
        done = threading.Event()

        def target() -> None:
            try:
                box["value"] = service(**kwargs)
            except BaseException as err:
                box["error"] = err
            finally:
                done.set()

        limit = getattr(service, "max_call_seconds", None) or self.timeout
        thread = threading.Thread(target=target, name=f"tool-{name}", daemon=True)
        thread.start()
        if not done.wait(limit):
            self._abandoned[name] = thread
            return None, f"timed out after {limit:g} s"
        if "error" in box:
            err = box["error"]
            return None, f"{type(err).__name__}: {err}"
        return box["value"], None

    def run_call(self, call: ToolCall, state: dict[str, Any] | None = None) -> tuple[str, bool]:
        """Runs one parsed call; returns the text reported for it and whether it succeeded."""
        if call.error is not None:
            return f"error: {call.error}", False
        try:
            service = self.registry.get(call.tool)
        except KeyError as err:
            return f"error: {err.args[0]}", False
        reserved = sorted(k for k in call.args if not isinstance(k, str) or k.startswith("_"))
        if reserved:
            return f"error: argument names starting with '_' are reserved, got {reserved}", False
        kwargs = dict(call.args)
        if self.pass_state_to_tools and state is not None and _accepts_state(service):
            kwargs["_state"] = state
        value, error = self._invoke(service, kwargs)
        if error is not None:
            return f"error: {error}", False
        if not isinstance(value, dict):
            value = {"result": value}
        try:
            text = json.dumps(value, default=str, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError) as err:
            return f"error: the result is not printable as JSON ({type(err).__name__})", False
        return text, True

    def run_reply(self, reply: str, state: dict[str, Any] | None = None) -> str | None:
        """The tool message for one reply, or ``None`` when it makes no call."""
        try:
            calls = self.parser(reply)["calls"]
        except Exception as err:
            return _cut(
                f"error: the tool parser failed ({type(err).__name__}: {err})",
                self.max_output_chars,
            )
        if not calls:
            return None
        if not isinstance(calls, (list, tuple)):
            return f"error: the tool parser returned {type(calls).__name__} calls, not a list"
        lines = []
        for k, call in enumerate(calls, 1):
            if not isinstance(call, ToolCall):
                lines.append(
                    f"[{k}] ?: error: the parser gave a {type(call).__name__}, not a ToolCall"
                )
                continue
            text, ok = self.run_call(call, state)
            label = call.tool if call.tag is None else f"{call.tool} (tag {call.tag})"
            lines.append(f"[{k}] {label}: {_cut(text, self.max_output_chars)}")
            if not ok and self.stop_on_error and k < len(calls):
                lines.append(
                    f"[{k + 1}-{len(calls)}] not run: an earlier call failed (stop_on_error)"
                )
                break
        return "\n".join(lines)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        history, replies = last_replies(next_tensordict, type(self).__name__)
        results = []
        for i, reply in enumerate(replies):
            state = None
            if self.pass_state_to_tools:
                state = {"index": i, "history": history[i : i + 1].to_chats()[0]}
            results.append(self.run_reply(reply, state))
        append_tool_messages(next_tensordict, history, results, role=self.tool_role)
        return next_tensordict

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset
