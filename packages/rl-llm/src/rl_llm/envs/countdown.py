"""CountdownEnv and CountdownRewardParser: reach a target number with arithmetic."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import torch

from rl_core import Compose, TransformedEnv
from rl_llm.envs._arith import ArithmeticError_, evaluate
from rl_llm.envs._reward_parser import RewardParserBase, last_answer_tag
from rl_llm.envs._task_env import EndOfDialog, parser_property
from rl_llm.envs.dataset_chat_env import DatasetChatEnv

COUNTDOWN_PROMPT = (
    "Combine the given numbers with + - * / and parentheses to reach the target. Use each "
    "number at most once. Give only the expression inside <answer></answer>."
)


def countdown_question(numbers: list[int], target: int) -> str:
    """The user message of one Countdown puzzle."""
    return f"Using the numbers {numbers}, make {target}."


def make_countdown_dataset(
    n: int, *, num_numbers: int = 3, max_number: int = 9, seed: int = 0
) -> list[dict[str, Any]]:
    """``n`` solvable puzzles ``{"numbers": [...], "target": t}`` (``t`` reached by a random
    expression over all numbers with ``+``, ``-``, ``*``)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        numbers = [rng.randint(1, max_number) for _ in range(num_numbers)]
        value = numbers[0]
        for x in numbers[1:]:
            value = rng.choice([value + x, value * x, abs(value - x)])
        out.append({"numbers": numbers, "target": value})
    return out


def countdown_score(
    response: str, numbers: list[int], target: int
) -> tuple[bool | None, str | None]:
    """``(correct, expression)``: ``correct`` is None when the reply has no ``<answer>`` tag.

    Correct means: only numbers, ``+ - * /`` and parentheses; every number used is one of
    ``numbers`` (each at most as often as given); the exact (rational) value equals
    ``target``.

    Examples:
        >>> from rl_llm.envs.countdown import countdown_score
        >>> countdown_score("<answer>(3 + 5) * 2</answer>", [2, 3, 5], 16)
        (True, '(3 + 5) * 2')
        >>> countdown_score("<answer>5 * 5</answer>", [2, 3, 5], 25)[0]
        False
        >>> countdown_score("16", [2, 3, 5], 16)
        (None, None)
    """
    found = last_answer_tag(response)
    if found is None:
        return None, None
    expression = found.strip()
    expression = expression.split("=")[0].strip()
    if not re.fullmatch(r"[\d+\-*/() .]+", expression or "x"):
        return False, expression
    try:
        value, used = evaluate(expression)
    except ArithmeticError_:
        return False, expression
    if any(not isinstance(u, int) for u in used):
        return False, expression
    if Counter(used) - Counter(numbers):
        return False, expression
    return value == Fraction(target), expression


def _integer(value: Any, field: str, where: str, puzzle: Any) -> int:
    """``value`` as an int; a non-integer (16.5, "x", True) is refused, naming ``field``."""
    if hasattr(value, "item") and not isinstance(value, (list, tuple)):
        value = value.item()  # a numpy or torch scalar
    exact = None
    if not isinstance(value, bool) and isinstance(value, (int, float, str)):
        try:
            exact = Fraction(value.strip() if isinstance(value, str) else value)
        except (ValueError, OverflowError, ZeroDivisionError):
            exact = None
    if exact is None or exact.denominator != 1:
        raise ValueError(
            f"{where}: expected an integer {field}, got {value!r} in the puzzle {puzzle!r}. "
            f"Countdown puzzles use whole numbers; drop the puzzle or make its {field} an int."
        )
    return int(exact)


def _as_puzzle(numbers: Any, target: Any, where: str, puzzle: Any) -> tuple[list[int], int]:
    """The puzzle's numbers and target as ints, each checked (see :func:`_integer`)."""
    if isinstance(numbers, (str, bytes)) or not hasattr(numbers, "__iter__"):
        raise ValueError(
            f"{where}: expected 'numbers' as a list of integers, got {numbers!r} in the "
            f"puzzle {puzzle!r}."
        )
    checked = [_integer(x, "number", where, puzzle) for x in numbers]
    return checked, _integer(target, "target", where, puzzle)


def _puzzle(answer: str) -> tuple[list[int], int]:
    where = "CountdownRewardParser"
    try:
        data = json.loads(answer)
        numbers, target = data["numbers"], data["target"]
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(
            f"{where}: expected the answer as JSON "
            f'{{"numbers": [...], "target": t}}, got {answer!r} ({err}).'
        ) from None
    return _as_puzzle(numbers, target, where, answer)


class CountdownRewardParser(RewardParserBase):
    """Rewards a reply whose ``<answer>`` expression reaches the target with the given numbers.

    The reference at ``"answer"`` is JSON ``{"numbers": [...], "target": t}`` (what
    :class:`CountdownEnv` writes). Reward: ``correct_reward`` (1.0) for a valid expression
    equal to the target (see :func:`countdown_score`), ``format_reward`` (0.1) for a tagged
    wrong one, 0 without a tag.

    Examples:
        >>> from rl_llm.envs import CountdownRewardParser
        >>> ref = '{"numbers": [2, 3, 5], "target": 16}'
        >>> CountdownRewardParser().score("<answer>(3+5)*2</answer>", ref)
        (1.0, True)
        >>> CountdownRewardParser().score("<answer>3*5+2</answer>", ref)
        (0.1, True)
    """

    def score(self, response: str, answer: str) -> tuple[float, bool]:
        numbers, target = _puzzle(answer)
        correct, _ = countdown_score(response, numbers, target)
        if correct is None:
            return 0.0, False
        return (self.correct_reward if correct else self.format_reward), True


class CountdownEnv(TransformedEnv):
    """A single-turn chat env of Countdown puzzles, rewarded by :class:`CountdownRewardParser`.

    Items are dicts with ``"numbers"`` (or ``"nums"``, the field of the TinyZero dataset) and
    ``"target"``; ``None`` generates ``num_puzzles`` puzzles with
    :func:`make_countdown_dataset`. The user message states the numbers and the target; the
    reference written at ``"answer"`` is the puzzle as JSON. After the reply, every dialog
    ends.

    A composition: a :class:`DatasetChatEnv` (``env.base_env``) seen through
    ``Compose(CountdownRewardParser(...), EndOfDialog())`` (``env.transform``).

    Args:
        dataset: puzzles, or ``None`` to generate them.
        batch_size: ``(B,)``, a multiple of ``repeats``.
        repeats: dialogs per puzzle (the GRPO group size).
        system_prompt: defaults to the rules and the ``<answer>`` format.
        format_reward: the reward of a tagged wrong expression.
        correct_reward: the reward of a correct expression.
        num_puzzles: how many puzzles to generate when ``dataset`` is ``None``.
        **kwargs: passed to :class:`DatasetChatEnv` (``shuffle``, ``seed``, ``tokenizer``).

    Examples:
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import CountdownEnv
        >>> env = CountdownEnv([{"numbers": [2, 3, 5], "target": 16}], batch_size=(2,), repeats=2)
        >>> td = env.reset()
        >>> td["query"][0]
        'Using the numbers [2, 3, 5], make 16.'
        >>> replies = ["<answer>(5+3)*2</answer>", "<answer>2+3</answer>"]
        >>> td["history"].full = td["history"].prompt.append(History.from_chats(
        ...     [[{"role": "assistant", "content": r}] for r in replies]))
        >>> [round(r, 2) for r in env.step(td)["next", "reward"].squeeze(-1).tolist()]
        [1.0, 0.1]
    """

    parser = parser_property

    def __init__(
        self,
        dataset: Iterable[Any] | None = None,
        *,
        batch_size: tuple[int, ...] | torch.Size = (1,),
        repeats: int = 1,
        system_prompt: str | None = COUNTDOWN_PROMPT,
        format_reward: float = 0.1,
        correct_reward: float = 1.0,
        num_puzzles: int = 256,
        **kwargs: Any,
    ) -> None:
        if dataset is None:
            dataset = make_countdown_dataset(num_puzzles, seed=kwargs.get("seed", 0))
        env = DatasetChatEnv(
            [self._as_item(p) for p in dataset],
            batch_size=batch_size,
            repeats=repeats,
            system_prompt=system_prompt,
            **kwargs,
        )
        parser = CountdownRewardParser(
            format_reward=format_reward, correct_reward=correct_reward, set_done_if_answer=False
        )
        super().__init__(env, Compose(parser, EndOfDialog()))

    @staticmethod
    def _as_item(puzzle: Any) -> dict[str, str]:
        if not isinstance(puzzle, dict) or "target" not in puzzle:
            raise ValueError(
                f"CountdownEnv: expected puzzles as dicts with 'numbers' (or 'nums') and "
                f"'target', got {puzzle!r}."
            )
        numbers = puzzle.get("numbers", puzzle.get("nums"))
        if numbers is None:
            raise ValueError(f"CountdownEnv: the puzzle {puzzle!r} has no 'numbers'.")
        numbers, target = _as_puzzle(numbers, puzzle["target"], "CountdownEnv", puzzle)
        return {
            "question": countdown_question(numbers, target),
            "answer": json.dumps({"numbers": numbers, "target": target}),
        }
