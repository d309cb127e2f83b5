"""GSM8KEnv: a math chat env whose reward checks an ``<answer>`` tag against the reference."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from typing import Any

import torch

from rl_core import Compose, TransformedEnv
from rl_llm.envs._arith import exact_decimal, same_number
from rl_llm.envs._reward_parser import RewardParserBase, last_answer_tag
from rl_llm.envs._task_env import EndOfDialog, parser_property
from rl_llm.envs.dataset_chat_env import DatasetChatEnv

MATH_SYSTEM_PROMPT = (
    "Solve the problem. Think briefly, then give the final number inside <answer></answer>."
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# One number as GSM8K's references and careful replies write it: an optional lead-in without
# digits ("the answer is", "x ="), an optional sign and currency, digits with thousands
# separators or none, an optional decimal part, an optional unit of a few words ("dollars",
# "km per hour", "%") and a final period.
_LEAD_IN = r"(?:[A-Za-z][A-Za-z' ]*?(?:\bis|\bare|:|=)\s*)?"
_AMOUNT = r"(?P<minus>[-\u2212]?)\s*[$\u20ac\u00a3]?\s*(?P<minus2>[-\u2212]?)"
_DIGITS = r"(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
_UNIT = r"(?:\s*(?P<unit>[A-Za-z%\u00b0][A-Za-z%\u00b0'/\- ]*))?"
# Matched against the answer without its final period: every part ends where the next
# begins, so the match is linear in the answer's length (no retries over runs of blanks).
_ONE_NUMBER = re.compile(rf"{_LEAD_IN}{_AMOUNT}{_DIGITS}{_UNIT}")
# Words that turn a number into another value or into a list of candidates: a unit made of
# them ("9 or 7", "5 thousand", "3 squared") is not a unit.
_NOT_UNITS = frozenset(
    [
        "or",
        "and",
        "nor",
        "plus",
        "minus",
        "times",
        "divided",
        "over",
        "by",
        "to",
        "versus",
        "vs",
        "not",
        "either",
        "maybe",
        "mod",
        "modulo",
        "squared",
        "cubed",
        "power",
        "hundred",
        "thousand",
        "million",
        "billion",
        "trillion",
        "dozen",
        "half",
    ]
)
#: At most this many words of unit ("square feet per hour").
_MAX_UNIT_WORDS = 4


def parse_answer(response: str) -> str | None:
    """The content of the last ``<answer>...</answer>`` tag of ``response``, stripped, or None."""
    found = last_answer_tag(response)
    return None if found is None else found.strip()


def read_number_answer(answer: str) -> str | None:
    """The one number an ``<answer>`` holds, as a plain decimal string, or ``None``.

    An answer is one number as GSM8K's references write it: an optional sign and currency
    sign, digits with or without thousands separators (``1,234``), an optional decimal
    part, then an optional unit of up to four words (``dollars``, ``km per hour``, ``%``),
    optionally after a lead-in without digits (``the answer is``, ``x =``). Anything else
    holding a digit is refused (``None``): several numbers (``7 or 9``, a list), an
    expression (``9**9``, ``3+6=9``), a number in words that change it (``5 thousand``,
    ``3 squared``).

    Examples:
        >>> from rl_llm.envs.gsm8k import read_number_answer
        >>> read_number_answer("$1,234.50"), read_number_answer("the answer is 18 dollars.")
        ('1234.50', '18')
        >>> read_number_answer("9**9**9**9"), read_number_answer("7 or 9"), read_number_answer("1 2 3")
        (None, None, None)
    """
    text = answer.strip()
    match = _ONE_NUMBER.fullmatch(text[:-1].rstrip() if text.endswith(".") else text)
    if match is None or (match.group("minus") and match.group("minus2")):
        return None
    unit = (match.group("unit") or "").lower().replace("/", " ").replace("-", " ").split()
    if len(unit) > _MAX_UNIT_WORDS or any(word.strip("'.") in _NOT_UNITS for word in unit):
        return None
    sign = "-" if match.group("minus") or match.group("minus2") else ""
    return sign + match.group("number").replace(",", "")


def answer_reward(response: str, reference: str, *, format_reward: float = 0.1) -> float:
    """1 when the tagged answer is the reference number, ``format_reward`` for a tag without
    a number, 0 without a tag or for a refused answer.

    The tag's content must be one number (:func:`read_number_answer`: thousands separators,
    a currency sign, a unit and a lead-in such as ``the answer is`` are allowed); a tag
    holding several numbers or an expression (``7 or 9``, ``9**9**9**9``, ``1 2 3 ... 100``)
    is refused and scores 0, so listing candidates never pays. The reference may be a GSM8K
    solution: the last number after its last ``####`` is used. The numbers compare exactly
    (as written: ``7.0`` equals ``7``, ``10000000000000001`` differs from
    ``10000000000000000``), by :func:`~rl_llm.envs._arith.same_number`; a number too long to
    hold exactly (over about 1,200 digits) matches nothing.

    Examples:
        >>> from rl_llm.envs.gsm8k import answer_reward
        >>> answer_reward("so <answer>12</answer>", "12"), answer_reward("<answer>1</answer>", "2")
        (1.0, 0.1)
        >>> answer_reward("12", "3 + 9 = 12\\n#### 12"), answer_reward("<answer>7 or 12</answer>", "12")
        (0.0, 0.0)
    """
    reference = reference.split("####")[-1].strip()
    answer = parse_answer(response)
    if answer is None:
        return 0.0
    if not any(c.isdigit() for c in answer):
        return format_reward
    got = read_number_answer(answer)
    if got is None:
        return 0.0
    want = _NUMBER.findall(reference.replace(",", ""))
    if want:
        a, b = exact_decimal(got), exact_decimal(want[-1])
        if a is not None and b is not None and same_number(a, b):
            return 1.0
    return format_reward


class GSM8KRewardParser(RewardParserBase):
    """GSM8K's reward as a transform: :func:`answer_reward` of each reply against its reference.

    ``correct_reward`` for a correct ``<answer>`` (numbers compared exactly, GSM8K ``####``
    references understood), ``format_reward`` for a tagged wrong one, 0 without a tag; every
    reply is scored, never raised. Adds to the step's reward and writes ``"success"``; with
    ``set_done_if_answer`` it ends the dialogs that answered. Works on a chat env (the last
    message) or on ``LLMEnv``'s ``"response"``; :class:`GSM8KEnv` is a ``DatasetChatEnv`` seen
    through it.

    Args:
        format_reward: the reward of a well-formed but wrong answer.
        correct_reward: the reward of a correct answer.
        set_done_if_answer: end the dialogs whose reply holds an answer tag.
        answer_key: where each dialog's reference is read.

    Examples:
        >>> from rl_llm.envs import GSM8KRewardParser
        >>> parser = GSM8KRewardParser()
        >>> parser.score("<answer>1,000</answer>", "#### 1000"), parser.score("no tag", "4")
        ((1.0, True), (0.0, False))
    """

    def score(self, response: str, answer: str) -> tuple[float, bool]:
        reward = answer_reward(response, answer, format_reward=self.format_reward)
        if reward == 1.0:
            return self.correct_reward, True
        return reward, reward > 0


def make_arithmetic_dataset(n: int, *, max_operand: int = 9, seed: int = 0) -> list[dict[str, str]]:
    """``n`` generated additions ``{"question": "What is 3+4?", "answer": "7"}``."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(0, max_operand), rng.randint(0, max_operand)
        out.append({"question": f"What is {a}+{b}?", "answer": str(a + b)})
    return out


class GSM8KEnv(TransformedEnv):
    """A single-turn math env: the reward checks ``<answer>`` tags against the reference.

    Items are dicts with ``"question"`` and ``"answer"`` (GSM8K's fields; the number after
    ``####`` in a GSM8K solution is the reference). After the policy's reply, the reward is
    :func:`answer_reward` of the reply and the dialog ends (``terminated``); ``"success"``
    marks the correct replies.

    A composition: a :class:`DatasetChatEnv` (``env.base_env``) seen through
    ``Compose(<answer_reward parser>, EndOfDialog())`` (``env.transform``).

    Args:
        dataset: an iterable of ``{"question", "answer"}`` dicts (a list, a ``datasets.Dataset``).
        batch_size: ``(B,)``, a multiple of ``repeats``.
        repeats: dialogs per question (the GRPO group size).
        system_prompt: defaults to an instruction to answer inside ``<answer>`` tags.
        format_reward: the reward of a well-formed but wrong answer.
        **kwargs: passed to :class:`DatasetChatEnv` (``shuffle``, ``seed``, ``tokenizer``).

    Examples:
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import GSM8KEnv
        >>> env = GSM8KEnv([{"question": "What is 2+2?", "answer": "4"}], batch_size=(2,), repeats=2)
        >>> td = env.reset()
        >>> replies = ["<answer>4</answer>", "5"]
        >>> td["history"].full = td["history"].prompt.append(History.from_chats(
        ...     [[{"role": "assistant", "content": r}] for r in replies]))
        >>> env.step(td)["next", "reward"].squeeze(-1).tolist()
        [1.0, 0.0]
    """

    parser = parser_property

    def __init__(
        self,
        dataset: Iterable[Any],
        *,
        batch_size: tuple[int, ...] | torch.Size = (1,),
        repeats: int = 1,
        system_prompt: str | None = MATH_SYSTEM_PROMPT,
        format_reward: float = 0.1,
        **kwargs: Any,
    ) -> None:
        env = DatasetChatEnv(
            dataset, batch_size=batch_size, repeats=repeats, system_prompt=system_prompt, **kwargs
        )
        if any(answer is None for _, answer in env.items):
            raise ValueError("GSM8KEnv: every item needs an 'answer'.")
        parser = GSM8KRewardParser(format_reward=format_reward, set_done_if_answer=False)
        super().__init__(env, Compose(parser, EndOfDialog()))

    @property
    def format_reward(self) -> float:
        """The reward of a well-formed but wrong answer (the parser's; settable)."""
        return self.parser.format_reward

    @format_reward.setter
    def format_reward(self, value: float) -> None:
        self.parser.format_reward = float(value)
