"""MATHEnv and MATHRewardParser: competition maths with ``\\boxed{}`` references."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import torch

from rl_core import Compose, TransformedEnv
from rl_llm.envs._arith import (
    ArithmeticError_,
    Number,
    evaluate,
    same_number,
    unsimplified_part,
)
from rl_llm.envs._reward_parser import RewardParserBase, last_answer_tag
from rl_llm.envs._task_env import EndOfDialog, parser_property
from rl_llm.envs.dataset_chat_env import DatasetChatEnv

MATH_PROMPT = (
    "Solve the problem. Think briefly, then give the final answer inside <answer></answer>."
)
#: Answers longer than this compare as canonical strings only (no value is computed).
_MAX_ANSWER_CHARS = 1000
#: LaTeX groups nested deeper than this have no value.
_MAX_LATEX_DEPTH = 50


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) of ``text``, braces matched.

    Examples:
        >>> from rl_llm.envs.math_env import last_boxed
        >>> last_boxed(r"so $\\boxed{\\frac{1}{2}}$ and \\boxed{3}")
        '3'
        >>> last_boxed(r"x = \\boxed{\\frac{1}{2}}") , last_boxed("none")
        ('\\\\frac{1}{2}', None)
    """
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        return None
    i = text.index("{", start) + 1
    depth, begin = 1, i
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[begin:i].strip()
        i += 1
    return None


def _brace_arg(s: str, i: int) -> tuple[str, int]:
    """The ``{...}`` group (or the single character) starting at ``i`` and the index after it."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        return "", i
    if s[i] != "{":
        return s[i], i + 1
    depth, j = 0, i
    while j < len(s):
        depth += {"{": 1, "}": -1}.get(s[j], 0)
        if depth == 0:
            return s[i + 1 : j], j + 1
        j += 1
    return s[i + 1 :], len(s)


def _latex_to_python(s: str, depth: int = 0) -> str:
    if depth > _MAX_LATEX_DEPTH:
        raise ArithmeticError_(f"groups nested deeper than {_MAX_LATEX_DEPTH}")
    out, i = [], 0
    while i < len(s):
        for cmd in ("\\dfrac", "\\tfrac", "\\frac"):
            if s.startswith(cmd, i):
                num, i = _brace_arg(s, i + len(cmd))
                den, i = _brace_arg(s, i)
                num, den = _latex_to_python(num, depth + 1), _latex_to_python(den, depth + 1)
                out.append(f"(({num})/({den}))")
                break
        else:
            if s.startswith("\\sqrt", i):
                arg, i = _brace_arg(s, i + len("\\sqrt"))
                out.append(f"sqrt({_latex_to_python(arg, depth + 1)})")
            elif s[i] == "{":
                arg, i = _brace_arg(s, i)
                out.append(f"({_latex_to_python(arg, depth + 1)})")
            else:
                out.append(s[i])
                i += 1
    return "".join(out)


def normalize_math_answer(answer: str) -> str:
    """A canonical string of a simple answer: spacing, ``$``, ``\\left``/``\\right``,
    ``\\text{}`` wrappers, degrees, a trailing period and thousands separators removed.

    Examples:
        >>> from rl_llm.envs.math_env import normalize_math_answer
        >>> normalize_math_answer(r"$\\left( 1, 2 \\right).$")
        '(1,2)'
        >>> normalize_math_answer(r"1,000\\text{ dollars}")
        '1000'
    """
    s = answer.strip()
    s = re.sub(r"\\text\{\s*[a-zA-Z ]*\}", "", s) if re.search(r"\d", s) else s
    s = re.sub(r"\\(?:text|textbf|mathrm|mbox)\{(.*?)\}", r"\1", s)
    for old in ("$", "\\left", "\\right", "\\!", "\\,", "\\;", "\\ ", "^\\circ", "^{\\circ}", "°"):
        s = s.replace(old, "")
    s = s.replace("\\%", "").replace("%", "")
    s = re.sub(r"\s+", "", s).rstrip(".")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", s):
        s = s.replace(",", "")
    if s.startswith("x=") or s.startswith("y="):
        s = s[2:]
    return s


def _value(s: str, *, simplified: bool = False) -> Number | None:
    """The value of an answer, or ``None``; with ``simplified``, also ``None`` for an answer
    that leaves arithmetic between numbers undone (see
    :func:`~rl_llm.envs._arith.unsimplified_part`)."""
    try:
        expr = _latex_to_python(s)
        expr = expr.replace("\\cdot", "*").replace("\\times", "*").replace("\\pi", "pi")
        expr = expr.replace("^", "**")
        expr = re.sub(r"(\d)\s*(pi|sqrt|\()", r"\1*\2", expr)
        value, _ = evaluate(expr, allow_functions=True)
    except ArithmeticError_:
        return None
    if simplified and unsimplified_part(expr) is not None:
        return None
    return value


def _bracketed(s: str) -> bool:
    return len(s) > 1 and s[0] in "([" and s[-1] in ")]"


def _scalar_equivalent(a: str, b: str) -> bool:
    """Equal canonical strings, or equal values (:func:`~rl_llm.envs._arith.same_number`) of
    a simplified prediction ``a`` and the reference ``b``."""
    if a == b:
        return True
    if len(a) > _MAX_ANSWER_CHARS or len(b) > _MAX_ANSWER_CHARS:
        return False
    va, vb = _value(a, simplified=True), _value(b)
    return va is not None and vb is not None and same_number(va, vb)


def math_equivalent(predicted: str, reference: str) -> bool:
    """Whether two simple answers are equal: same canonical string, or same numeric value.

    Numeric values come from integers, decimals, fractions (``\\frac``, ``/``), roots
    (``\\sqrt``), ``\\pi`` and powers. Integers and exact rationals compare exactly; a
    relative tolerance of 1e-6 applies only to inexact values (``\\pi``, irrational roots),
    see :func:`~rl_llm.envs._arith.same_number`. The predicted answer is compared by value only
    when it is simplified: one that leaves arithmetic between numbers to do (``2+2``,
    ``2^{10}``, ``\\sqrt{16}``, ``\\frac{8}{2}``) matches only a reference written the same
    way, so restating the question's expression never scores (see
    :func:`~rl_llm.envs._arith.unsimplified_part`). Tuples and intervals compare entry by entry
    and need the same brackets: ``(1, 2)`` (open) differs from ``[1, 2]`` (closed). Answers
    over 1000 characters compare as strings only; any input returns, none raises.

    Examples:
        >>> from rl_llm.envs.math_env import math_equivalent
        >>> math_equivalent(r"\\frac{1}{2}", "0.5"), math_equivalent(r"2\\sqrt{2}", r"\\sqrt{8}")
        (True, True)
        >>> math_equivalent("(1, 2)", r"\\left(1,2\\right)"), math_equivalent("(1, 2)", "[1, 2]")
        (True, False)
        >>> math_equivalent("1000001", "1000000"), math_equivalent("3", "4")
        (False, False)
        >>> math_equivalent("2+2", "4"), math_equivalent(r"\\sqrt{16}", "4"), math_equivalent("2+2", "2+2")
        (False, False, True)
    """
    if len(predicted) > 4 * _MAX_ANSWER_CHARS or len(reference) > 4 * _MAX_ANSWER_CHARS:
        return predicted.strip() == reference.strip()
    a, b = normalize_math_answer(predicted), normalize_math_answer(reference)
    if not a or not b:
        return False
    if a == b:
        return True
    if _bracketed(a) and _bracketed(b):
        if (a[0], a[-1]) != (b[0], b[-1]):
            return False
        xs, ys = a[1:-1].split(","), b[1:-1].split(",")
        return len(xs) == len(ys) and all(_scalar_equivalent(x, y) for x, y in zip(xs, ys))
    return _scalar_equivalent(a, b)


def unsimplified_answer(predicted: str) -> bool:
    """Whether a predicted answer (or an entry of its tuple) leaves arithmetic between numbers
    undone (``2+2``, ``2^{10}``, ``\\sqrt{16}``, ``(1+1, 2)``): :class:`MATHRewardParser`
    refuses it (reward 0) unless it is written exactly as the reference.

    Examples:
        >>> from rl_llm.envs.math_env import unsimplified_answer
        >>> unsimplified_answer("2+2"), unsimplified_answer(r"\\frac{1}{2}"), unsimplified_answer("x")
        (True, False, False)
    """
    if len(predicted) > 4 * _MAX_ANSWER_CHARS:
        return False
    a = normalize_math_answer(predicted)
    parts = a[1:-1].split(",") if _bracketed(a) else [a]
    return any(
        len(x) <= _MAX_ANSWER_CHARS and _value(x) is not None and _value(x, simplified=True) is None
        for x in parts
    )


def extract_math_answer(response: str) -> str | None:
    """The answer of a reply: its last ``<answer>`` tag (a ``\\boxed{}`` inside wins), else
    its last ``\\boxed{}``, else ``None``."""
    inner = last_answer_tag(response)
    if inner is not None:
        return last_boxed(inner) or inner.strip()
    return last_boxed(response)


class MATHRewardParser(RewardParserBase):
    """Rewards a reply whose answer equals the ``\\boxed{}`` answer of the reference solution.

    The reply's answer is its last ``<answer>...</answer>`` tag (or its last ``\\boxed{}``);
    the reference is the last ``\\boxed{}`` of the MATH solution at ``"answer"`` (the whole
    reference when it holds none). Equivalence: :func:`math_equivalent`. The reward
    (added to the step's reward, ``[B, 1]``) is ``correct_reward`` for a correct answer,
    ``format_reward`` for a wrong but parseable one, 0 otherwise: an answer that leaves
    arithmetic between numbers undone (``2+2``, ``\\sqrt{16}``; :func:`unsimplified_answer`)
    is refused with 0 unless written exactly as the reference, so restating the question's
    expression never pays. ``"success"`` marks the correct ones.

    Args:
        format_reward: defaults to 0.1.
        correct_reward: defaults to 1.0.
        set_done_if_answer: end the dialogs whose reply holds an answer (default True).

    Examples:
        >>> from rl_llm.envs import MATHRewardParser
        >>> parser = MATHRewardParser()
        >>> parser.score("<answer>1/2</answer>", r"... so \\boxed{\\frac{1}{2}}")
        (1.0, True)
        >>> parser.score("<answer>2</answer>", r"\\boxed{3}"), parser.score("3", r"\\boxed{3}")
        ((0.1, True), (0.0, False))
    """

    def score(self, response: str, answer: str) -> tuple[float, bool]:
        predicted = extract_math_answer(response)
        if predicted is None:
            return 0.0, False
        reference = last_boxed(answer) or answer
        if math_equivalent(predicted, reference):
            return self.correct_reward, True
        if unsimplified_answer(predicted):
            return 0.0, False
        return self.format_reward, True


class MATHEnv(TransformedEnv):
    """A single-turn chat env over MATH-style problems, rewarded by :class:`MATHRewardParser`.

    Items are dicts with ``"problem"`` and ``"solution"`` (the fields of the MATH dataset; the
    solution's last ``\\boxed{}`` is the reference). After the policy's reply the reward is
    the parser's and every dialog ends (``terminated``).

    A composition: a :class:`DatasetChatEnv` (``env.base_env``) seen through
    ``Compose(MATHRewardParser(...), EndOfDialog())`` (``env.transform``); append transforms
    with ``env.append_transform``.

    Args:
        dataset: an iterable of ``{"problem", "solution"}`` dicts (list, ``datasets.Dataset``).
        batch_size: ``(B,)``, a multiple of ``repeats``.
        repeats: dialogs per problem (the GRPO group size).
        system_prompt: defaults to an instruction to answer inside ``<answer>`` tags.
        format_reward: the reward of a parseable wrong answer.
        correct_reward: the reward of a correct answer.
        **kwargs: passed to :class:`DatasetChatEnv` (``shuffle``, ``seed``, ``tokenizer``).

    Examples:
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import MATHEnv
        >>> env = MATHEnv([{"problem": "Half of 1?", "solution": r"It is \\boxed{\\frac12}."}],
        ...     batch_size=(2,), repeats=2)
        >>> td = env.reset()
        >>> td["history"].full = td["history"].prompt.append(History.from_chats(
        ...     [[{"role": "assistant", "content": r}] for r in ["<answer>0.5</answer>", "?"]]))
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
        system_prompt: str | None = MATH_PROMPT,
        format_reward: float = 0.1,
        correct_reward: float = 1.0,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("question_key", "problem")
        kwargs.setdefault("answer_key", "solution")
        env = DatasetChatEnv(
            dataset, batch_size=batch_size, repeats=repeats, system_prompt=system_prompt, **kwargs
        )
        if any(answer is None for _, answer in env.items):
            raise ValueError(
                f"MATHEnv: every item needs a {kwargs['answer_key']!r} (the reference solution)."
            )
        parser = MATHRewardParser(
            format_reward=format_reward, correct_reward=correct_reward, set_done_if_answer=False
        )
        super().__init__(env, Compose(parser, EndOfDialog()))
