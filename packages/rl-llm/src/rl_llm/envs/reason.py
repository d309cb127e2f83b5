"""AddThinkingPrompt: asks the model to reconsider a reply instead of ending the dialog."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_llm.data import History
from rl_llm.keys import HISTORY

DEFAULT_PROMPT = "But wait, let me think about this more carefully..."
EGOCENTRIC_PROMPTS = [
    DEFAULT_PROMPT,
    "Hmm, let me double-check my reasoning.",
    "Wait, I should verify this step by step.",
]
NON_EGOCENTRIC_PROMPTS = [
    "Are you sure? Please think about it more carefully.",
    "Please double-check your reasoning before answering.",
]
_ANSWER = re.compile(r"<answer>", re.IGNORECASE)


class AddThinkingPrompt(Transform):
    """When ``cond`` holds after a step, adds a "think again" prompt and keeps the dialog going.

    With ``role="assistant"`` and ``edit_last_turn`` the prompt is written into the last
    assistant message (before its last ``<answer>`` tag, else at its end), so the model's
    next turn continues its own reasoning; with ``role="user"`` it is appended as a new user
    message (to every dialog: histories of a batch share one length). The reward of the
    prompted dialogs is set to 0 (``zero_reward``, default True for ``role="assistant"``)
    and their done flags cleared (``undo_done``).

    Args:
        cond: ``cond(next_tensordict)`` -> a bool, or a ``[B]``/``[B, 1]`` bool tensor (per
            dialog; ``role="user"`` needs the same answer for every dialog).
        prompt: the text; defaults to "But wait, let me think about this more carefully...".
        random_prompt: draw the text from a small list instead.
        role: ``"assistant"`` or ``"user"``.
        edit_last_turn: with ``role="assistant"``, edit the last message (only mode here).
        zero_reward: zero the prompted dialogs' reward (default: ``role == "assistant"``).
        undo_done: clear the prompted dialogs' done flags (default True).
        egocentric: phrase the random prompts in the first person (default: ``role ==
            "assistant"``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core import TransformedEnv
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import AddThinkingPrompt, GSM8KEnv
        >>> env = TransformedEnv(GSM8KEnv([{"question": "1+1?", "answer": "2"}]),
        ...     AddThinkingPrompt(cond=lambda td: td["reward"] < 1))
        >>> td = env.reset()
        >>> td["history"].full = td["history"].prompt.append(History.from_chats(
        ...     [[{"role": "assistant", "content": "It is <answer>3</answer>"}]]))
        >>> out = env.step(td)["next"]
        >>> out["history"].prompt[0, -1].content
        'It is But wait, let me think about this more carefully... <answer>3</answer>'
        >>> bool(out["done"]), out["reward"].item()
        (False, 0.0)
    """

    def __init__(
        self,
        cond: Callable[[TensorDictBase], Any],
        prompt: str | None = None,
        random_prompt: bool = False,
        role: str = "assistant",
        edit_last_turn: bool = True,
        zero_reward: bool | None = None,
        undo_done: bool = True,
        egocentric: bool | None = None,
    ) -> None:
        super().__init__()
        if role not in ("assistant", "user"):
            raise ValueError(
                f"AddThinkingPrompt: expected role 'assistant' or 'user', got {role!r}."
            )
        if role == "assistant" and not edit_last_turn:
            raise ValueError(
                "AddThinkingPrompt: role='assistant' edits the last turn; a separate assistant "
                "message would be a reply the model never wrote. Use role='user' instead."
            )
        self.cond = cond
        self.prompt = prompt or DEFAULT_PROMPT
        self.random_prompt = random_prompt
        self.role = role
        self.edit_last_turn = edit_last_turn
        self.zero_reward = role == "assistant" if zero_reward is None else zero_reward
        self.undo_done = undo_done
        self.egocentric = role == "assistant" if egocentric is None else egocentric
        self._rng = random.Random(0)

    def _text(self) -> str:
        if not self.random_prompt:
            return self.prompt
        return self._rng.choice(EGOCENTRIC_PROMPTS if self.egocentric else NON_EGOCENTRIC_PROMPTS)

    def _which(self, next_tensordict: TensorDictBase) -> torch.Tensor:
        b = next_tensordict.batch_size[0]
        got = self.cond(next_tensordict)
        if isinstance(got, torch.Tensor):
            got = got.reshape(-1).bool()
            if got.numel() == 1:
                got = got.expand(b)
            if got.numel() != b:
                raise ValueError(
                    f"AddThinkingPrompt: cond returned {got.numel()} values for {b} dialogs."
                )
            return got
        return torch.full((b,), bool(got))

    @staticmethod
    def _insert(content: str, text: str) -> str:
        found = list(_ANSWER.finditer(content))
        if not found:
            return f"{content} {text}"
        at = found[-1].start()
        return f"{content[:at]}{text} {content[at:]}"

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        which = self._which(next_tensordict)
        if not bool(which.any()):
            return next_tensordict
        history = next_tensordict.get((HISTORY, "prompt"), None)
        if history is None:
            raise KeyError("AddThinkingPrompt: expected ('history', 'prompt') in the step output.")
        chats = history.to_chats()
        if self.role == "user":
            if not bool(which.all()):
                raise ValueError(
                    "AddThinkingPrompt(role='user'): cond held for some dialogs only; a new "
                    "message must go to every dialog of the batch (one history length)."
                )
            for chat in chats:
                chat.append({"role": "user", "content": self._text()})
        else:
            for chat, hit in zip(chats, which.tolist()):
                if hit:
                    last = chat[-1]
                    if last["role"] != "assistant":
                        raise ValueError(
                            "AddThinkingPrompt(role='assistant'): expected the last message to "
                            f"be the assistant's, got {last['role']!r}."
                        )
                    chat[-1] = {
                        "role": "assistant",
                        "content": self._insert(last["content"], self._text()),
                    }
        next_tensordict.get(HISTORY).prompt = History.from_chats(chats)
        mask = which.unsqueeze(-1)
        if self.zero_reward and next_tensordict.get("reward", None) is not None:
            reward = next_tensordict.get("reward")
            next_tensordict.set("reward", reward.masked_fill(mask.reshape(reward.shape), 0.0))
        if self.undo_done:
            for key in ("done", "terminated", "truncated"):
                flag = next_tensordict.get(key, None)
                if flag is not None:
                    next_tensordict.set(key, flag & ~mask.reshape(flag.shape))
        return next_tensordict

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset
