"""SimpleToolTransform: calls registered Python functions named in the model's replies."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tensordict import TensorDictBase

from rl_core import Transform
from rl_llm.envs._tool_utils import append_tool_messages, last_replies

_CALL = re.compile(r'<tool name="([\w.-]+)">(.*?)</tool>', re.DOTALL)


class SimpleToolTransform(Transform):
    """A ChatEnv transform that runs ``<tool name="f">{json args}</tool>`` calls in-process.

    Every call in a dialog's last message runs ``tools[name](**args)``; the results (or the
    error: unknown tool, bad JSON, an exception) are joined into one ``tool`` message appended
    to the next prompt. The functions run in the env's process, unsandboxed: register only
    trusted code.

    Args:
        tools: name -> function taking keyword arguments.

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_core import TransformedEnv
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import ChatEnv, SimpleToolTransform
        >>> env = TransformedEnv(ChatEnv(batch_size=(1,)),
        ...     SimpleToolTransform({"add": lambda a, b: a + b}))
        >>> td = env.reset(TensorDict(query=["3+4?"], batch_size=[1]))
        >>> reply = '<tool name="add">{"a": 3, "b": 4}</tool>'
        >>> td["history"].full = td["history"].prompt.append(
        ...     History.from_chats([[{"role": "assistant", "content": reply}]]))
        >>> env.step(td)["next", "history"].prompt[0, -1].content
        'add: 7'
    """

    def __init__(self, tools: dict[str, Callable[..., Any]]) -> None:
        super().__init__()
        bad = [name for name, fn in tools.items() if not callable(fn)]
        if bad:
            raise TypeError(f"SimpleToolTransform: expected callables, got non-callable {bad}.")
        self.tools = dict(tools)

    def call(self, name: str, arguments: str) -> str:
        """Runs one call; returns ``"name: result"`` or ``"name: error: ..."``."""
        fn = self.tools.get(name)
        if fn is None:
            return f"{name}: error: unknown tool; known tools are {sorted(self.tools)}"
        try:
            args = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as err:
            return f"{name}: error: arguments are not JSON ({err.msg})"
        if not isinstance(args, dict):
            return f"{name}: error: arguments must be a JSON object, got {type(args).__name__}"
        try:
            return f"{name}: {fn(**args)}"
        except Exception as err:
            return f"{name}: error: {type(err).__name__}: {err}"

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        history, replies = last_replies(next_tensordict, type(self).__name__)
        results = []
        for reply in replies:
            calls = _CALL.findall(reply)
            results.append("\n".join(self.call(n, a) for n, a in calls) if calls else None)
        append_tool_messages(next_tensordict, history, results)
        return next_tensordict
