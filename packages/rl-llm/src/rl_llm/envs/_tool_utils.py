"""Helpers of the tool transforms: find the last reply, append one tool message per dialog."""

from __future__ import annotations

from tensordict import TensorDictBase

from rl_llm._utils import as_strings
from rl_llm.data import History
from rl_llm.keys import HISTORY

NO_CALL = "(no tool call in the last message)"


def last_replies(next_tensordict: TensorDictBase, where: str) -> tuple[History, list[str]]:
    """The next prompt history and the content of each dialog's last (assistant) message."""
    history = next_tensordict.get((HISTORY, "prompt"), None)
    if history is None:
        raise KeyError(
            f"{where}: expected ('history', 'prompt') in the env's step output; put the "
            f"transform on a ChatEnv."
        )
    return history, as_strings(history[..., -1].content)


def append_tool_messages(
    next_tensordict: TensorDictBase,
    history: History,
    results: list[str | None],
    role: str = "tool",
) -> None:
    """Appends a ``role`` message with each result; dialogs without a call get :data:`NO_CALL`.

    Nothing is appended when no dialog made a call (histories in a batch keep one length).
    """
    if all(r is None for r in results):
        return
    reply = History.from_chats(
        [[{"role": role, "content": NO_CALL if r is None else r}] for r in results]
    )
    next_tensordict.get(HISTORY).prompt = history.append(reply)
