"""Text: the prompt, response and full strings of a batch of dialogs."""

from __future__ import annotations

from tensordict import tensorclass


@tensorclass
class Text:
    """Strings of one generation step, batch ``(B,)``: ``full == prompt + response``.

    Examples:
        >>> from rl_llm.data import Text
        >>> text = Text(prompt=["Q: 1+1?"], response=[" 2"], full=["Q: 1+1? 2"], batch_size=(1,))
        >>> text[0].full
        'Q: 1+1? 2'
    """

    prompt: str | None = None
    response: str | None = None
    full: str | None = None
