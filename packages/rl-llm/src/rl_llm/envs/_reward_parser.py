"""RewardParserBase: the shared step logic of the task reward parsers (MATH, Countdown, IFEval).

A parser reads each dialog's last reply and its reference (``"answer"``), scores the pair with
its ``score`` method and adds the score to the step's reward. It also writes ``"success"``
(the reply earned ``correct_reward``) and, with ``set_done_if_answer``, ends the dialogs whose
reply held a parseable answer.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_llm._utils import as_strings
from rl_llm.keys import ANSWER, HISTORY

RESPONSE = "response"
_OPEN, _CLOSE = "<answer>", "</answer>"


def last_answer_tag(text: str) -> str | None:
    """The content of the last ``<answer>...</answer>`` of ``text`` (unstripped), or ``None``.

    Pairs are read as the regex ``<answer>(.*?)</answer>`` reads them (left to right, each
    from an opening tag to the first closing tag after it), in time linear in ``len(text)``:
    the regex retries every unclosed ``<answer>``, quadratic in a reply that repeats it.

    Examples:
        >>> from rl_llm.envs._reward_parser import last_answer_tag
        >>> last_answer_tag("<answer>1</answer> <answer> 2 </answer>"), last_answer_tag("3")
        (' 2 ', None)
    """
    found, pos = None, 0
    while (start := text.find(_OPEN, pos)) >= 0:
        end = text.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            break
        found, pos = text[start + len(_OPEN) : end], end + len(_CLOSE)
    return found


def replies_of(
    tensordict: TensorDictBase, next_tensordict: TensorDictBase, where: str
) -> list[str]:
    """Each dialog's last reply: ``"response"`` text (text envs) or the last chat message."""
    text = tensordict.get(RESPONSE, None)
    if text is not None:
        return as_strings(text)
    history = next_tensordict.get((HISTORY, "prompt"), None)
    if history is None:
        history = tensordict.get((HISTORY, "full"), None)
    if history is None:
        raise KeyError(
            f"{where}: expected the reply as a 'response' string (LLMEnv) or as the last "
            f"message of ('history', 'prompt') in the step output (ChatEnv); found neither."
        )
    return as_strings(history[..., -1].content)


class RewardParserBase(Transform):
    """Scores each reply against its reference and adds the score to the reward.

    Subclasses implement :meth:`score` (``(reward, has_answer)`` of one reply).

    Args:
        format_reward: the reward of a well-formed but wrong answer.
        correct_reward: the reward of a correct answer.
        set_done_if_answer: end the dialogs whose reply holds a parseable answer.
        answer_key: where the reference of each dialog is read.
    """

    def __init__(
        self,
        *,
        format_reward: float = 0.1,
        correct_reward: float = 1.0,
        set_done_if_answer: bool = True,
        answer_key: str = ANSWER,
    ) -> None:
        super().__init__()
        self.format_reward = float(format_reward)
        self.correct_reward = float(correct_reward)
        self.set_done_if_answer = set_done_if_answer
        self.answer_key = answer_key

    def score(self, response: str, answer: str) -> tuple[float, bool]:
        """``(reward, has_answer)`` for one reply and its reference."""
        raise NotImplementedError(f"{type(self).__name__} must implement score().")

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        name = type(self).__name__
        replies = replies_of(tensordict, next_tensordict, name)
        answers = tensordict.get(self.answer_key, None)
        if answers is None:
            raise KeyError(
                f"{name}: expected the reference of each dialog at {self.answer_key!r} (written "
                f"by the dataset env or DataLoadingPrimer); it is missing."
            )
        answers = as_strings(answers)
        scored = [self.score(r, a) for r, a in zip(replies, answers, strict=True)]
        rewards = torch.tensor([s for s, _ in scored], dtype=torch.float32).unsqueeze(-1)
        reward = next_tensordict.get("reward", None)
        next_tensordict.set("reward", rewards if reward is None else reward + rewards.to(reward))
        next_tensordict.set("success", rewards >= self.correct_reward)
        if self.set_done_if_answer:
            answered = torch.tensor([h for _, h in scored]).unsqueeze(-1)
            for key in ("done", "terminated"):
                flag = next_tensordict.get(key, None)
                if flag is not None:
                    next_tensordict.set(key, flag | answered.reshape(flag.shape))
        return next_tensordict

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset
