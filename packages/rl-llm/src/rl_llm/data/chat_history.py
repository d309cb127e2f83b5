"""ChatHistory: the prompt, response and full histories of one generation step."""

from __future__ import annotations

from tensordict import tensorclass

from rl_llm.data.history import History


@tensorclass
class ChatHistory:
    """The histories of one step, batch ``(B,)``: ``full`` is ``prompt`` plus ``response``.

    Each field is a :class:`~rl_llm.data.History` of batch ``(B, n)``.

    Examples:
        >>> from rl_llm.data import ChatHistory, History
        >>> prompt = History.from_chats([[{"role": "user", "content": "hi"}]])
        >>> ChatHistory(prompt=prompt, batch_size=(1,)).prompt.batch_size
        torch.Size([1, 1])
    """

    prompt: History | None = None
    response: History | None = None
    full: History | None = None
