"""MATHEnv and MATHRewardParser: competition maths with ``\\boxed{}`` references."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_llm.envs._arith import ArithmeticError_, evaluate
from rl_llm.envs._reward_parser import RewardParserBase
from rl_llm.envs.dataset_chat_env import DatasetChatEnv

MATH_PROMPT = (
    "Solve the problem. Think briefly, then give the final answer inside <answer></answer>."
)
_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


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


def _latex_to_python(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        for cmd in ("\\dfrac", "\\tfrac", "\\frac"):
            if s.startswith(cmd, i):
                num, i = _brace_arg(s, i + len(cmd))
                den, i = _brace_arg(s, i)
                out.append(f"(({_latex_to_python(num)})/({_latex_to_python(den)}))")
                break
        else:
            if s.startswith("\\sqrt", i):
                arg, i = _brace_arg(s, i + len("\\sqrt"))
                out.append(f"sqrt({_latex_to_python(arg)})")
            elif s[i] == "{":
                arg, i = _brace_arg(s, i)
                out.append(f"({_latex_to_python(arg)})")
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


def _value(s: str) -> complex | float | None:
    expr = _latex_to_python(s)
    expr = expr.replace("\\cdot", "*").replace("\\times", "*").replace("\\pi", "pi")
    expr = expr.replace("^", "**")
    expr = re.sub(r"(\d)\s*(pi|sqrt|\()", r"\1*\2", expr)
    try:
        value, _ = evaluate(expr, allow_functions=True)
    except (ArithmeticError_, OverflowError, ZeroDivisionError, ValueError):
        return None
    return float(value)


def math_equivalent(predicted: str, reference: str) -> bool:
    """Whether two simple answers are equal: same canonical string, or same numeric value.

    Numeric values come from fractions (``\\frac``, ``/``), roots (``\\sqrt``), ``\\pi``,
    powers and decimals, compared to a relative tolerance of 1e-6; tuples compare entry by
    entry.

    Examples:
        >>> from rl_llm.envs.math_env import math_equivalent
        >>> math_equivalent(r"\\frac{1}{2}", "0.5"), math_equivalent(r"2\\sqrt{2}", r"\\sqrt{8}")
        (True, True)
        >>> math_equivalent("(1, 2)", r"\\left(1,2\\right)"), math_equivalent("3", "4")
        (True, False)
    """
    a, b = normalize_math_answer(predicted), normalize_math_answer(reference)
    if not a or not b:
        return False
    if a == b:
        return True
    if a[0] in "([" and b[0] in "([" and a[-1] in ")]" and b[-1] in ")]":
        xs, ys = a[1:-1].split(","), b[1:-1].split(",")
        return len(xs) == len(ys) and all(math_equivalent(x, y) for x, y in zip(xs, ys))
    va, vb = _value(a), _value(b)
    if va is None or vb is None:
        return False
    return abs(va - vb) <= 1e-6 * max(1.0, abs(vb))


def extract_math_answer(response: str) -> str | None:
    """The answer of a reply: its last ``<answer>`` tag (a ``\\boxed{}`` inside wins), else
    its last ``\\boxed{}``, else ``None``."""
    tags = _TAG.findall(response)
    if tags:
        inner = tags[-1]
        return last_boxed(inner) or inner.strip()
    return last_boxed(response)


class MATHRewardParser(RewardParserBase):
    """Rewards a reply whose answer equals the ``\\boxed{}`` answer of the reference solution.

    The reply's answer is its last ``<answer>...</answer>`` tag (or its last ``\\boxed{}``);
    the reference is the last ``\\boxed{}`` of the MATH solution at ``"answer"`` (the whole
    reference when it holds none). Equivalence: :func:`math_equivalent`. The reward
    (added to the step's reward, ``[B, 1]``) is ``correct_reward`` for a correct answer,
    ``format_reward`` for a wrong but parseable one, 0 otherwise; ``"success"`` marks the
    correct ones.

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
        return self.format_reward, True


class MATHEnv(DatasetChatEnv):
    """A single-turn chat env over MATH-style problems, rewarded by :class:`MATHRewardParser`.

    Items are dicts with ``"problem"`` and ``"solution"`` (the fields of the MATH dataset; the
    solution's last ``\\boxed{}`` is the reference). After the policy's reply the reward is
    the parser's and every dialog ends (``terminated``).

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
        super().__init__(
            dataset, batch_size=batch_size, repeats=repeats, system_prompt=system_prompt, **kwargs
        )
        if any(answer is None for _, answer in self.items):
            raise ValueError(
                f"MATHEnv: every item needs a {kwargs['answer_key']!r} (the reference solution)."
            )
        self.parser = MATHRewardParser(
            format_reward=format_reward, correct_reward=correct_reward, set_done_if_answer=False
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = super()._step(tensordict)
        self.parser._step(tensordict, out)
        out.set("terminated", torch.ones_like(out.get("terminated")))
        out.set("done", torch.ones_like(out.get("done")))
        return out
