"""IFEvalEnv and IfEvalScorer: instruction-following prompts checked by rules."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import torch

from rl_core import Compose, TransformedEnv
from rl_llm.envs._reward_parser import RewardParserBase
from rl_llm.envs._task_env import EndOfDialog, parser_property
from rl_llm.envs.dataset_chat_env import DatasetChatEnv


def _words(text: str) -> list[str]:
    return re.findall(r"\b\w+\b", text)


def _compare(count: int, relation: str, n: int) -> bool:
    if relation == "less than":
        return count < n
    if relation == "at least":
        return count >= n
    raise ValueError(
        f"IfEvalScorer: expected relation 'less than' or 'at least', got {relation!r}."
    )


def _no_comma(text: str) -> bool:
    return "," not in text


def _lowercase(text: str) -> bool:
    # str.islower: at least one cased letter, and every cased letter lower case ("" and
    # "123 456" are not lower-case text).
    return text.islower()


def _capital(text: str) -> bool:
    return text.isupper()


def _number_words(text: str, *, num_words: int, relation: str) -> bool:
    return _compare(len(_words(text)), relation, num_words)


def _number_sentences(text: str, *, num_sentences: int, relation: str) -> bool:
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]
    return _compare(len(sentences), relation, num_sentences)


def _existence(text: str, *, keywords: list[str]) -> bool:
    return all(re.search(rf"\b{re.escape(k)}\b", text, re.IGNORECASE) for k in keywords)


def _forbidden(text: str, *, forbidden_words: list[str]) -> bool:
    return not any(re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE) for w in forbidden_words)


def _frequency(text: str, *, keyword: str, frequency: int, relation: str) -> bool:
    count = len(re.findall(rf"\b{re.escape(keyword)}\b", text, re.IGNORECASE))
    return _compare(count, relation, frequency)


def _title(text: str) -> bool:
    # A title is <<...>> within one line around some non-space text; the pairs are read as
    # the regex <<([^\n]+?)>> reads them (left to right, each up to the first >> after it),
    # in linear time (the regex retries every << of a line without >>: quadratic).
    for line in text.split("\n"):
        pos = 0
        while (start := line.find("<<", pos)) >= 0:
            end = line.find(">>", start + 3)
            if end < 0:
                break
            if line[start + 2 : end].strip():
                return True
            pos = end + 2
    return False


# Line starts, then blanks within the line only: ``^\s*`` would also run over newlines and
# retry from every blank line (quadratic in a reply of blank lines); the count is the same.
_BULLET = re.compile(r"^[^\S\n]*[*-]\s", re.MULTILINE)


def _bullets(text: str, *, num_bullets: int) -> bool:
    return len(_BULLET.findall(text)) == num_bullets


def _end_checker(text: str, *, end_phrase: str) -> bool:
    return text.strip().lower().endswith(end_phrase.strip().lower())


def _quotation(text: str) -> bool:
    text = text.strip()
    return len(text) > 1 and text[0] == '"' and text[-1] == '"'


def _postscript(text: str, *, postscript_marker: str) -> bool:
    marker = rf"^[^\S\n]*{re.escape(postscript_marker)}"  # blanks within the line, see _BULLET
    return re.search(marker, text, re.MULTILINE | re.I) is not None


def _json_format(text: str) -> bool:
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        json.loads(body)
    except (ValueError, RecursionError):  # nested deeper than the decoder goes: not JSON here
        return False
    return True


#: The checks this module implements, by IFEval instruction id.
IFEVAL_CHECKS: dict[str, Callable[..., bool]] = {
    "punctuation:no_comma": _no_comma,
    "change_case:english_lowercase": _lowercase,
    "change_case:english_capital": _capital,
    "length_constraints:number_words": _number_words,
    "length_constraints:number_sentences": _number_sentences,
    "keywords:existence": _existence,
    "keywords:forbidden_words": _forbidden,
    "keywords:frequency": _frequency,
    "detectable_format:title": _title,
    "detectable_format:number_bullet_lists": _bullets,
    "detectable_format:json_format": _json_format,
    "startend:end_checker": _end_checker,
    "startend:quotation": _quotation,
    "detectable_content:postscript": _postscript,
}


def _instruction_kwargs(
    instruction_id_list: list[str], kwargs: Any, *, where: str = "IfEvalScorer"
) -> list[dict[str, Any]]:
    """``kwargs`` checked: a list of one dict (or ``None``, read as ``{}``) per instruction.

    Raises:
        ValueError: ``kwargs`` is not such a list, naming ``kwargs`` and the entry.
    """
    if not isinstance(kwargs, (list, tuple)):
        raise ValueError(
            f"{where}: expected kwargs as a list of one dict per instruction, got "
            f"{type(kwargs).__name__} {kwargs!r}."
        )
    if len(kwargs) != len(instruction_id_list):
        raise ValueError(
            f"{where}: expected one kwargs dict per instruction, got {len(kwargs)} for "
            f"{len(instruction_id_list)} instructions."
        )
    for i, (iid, kw) in enumerate(zip(instruction_id_list, kwargs)):
        if kw is not None and not isinstance(kw, dict):
            raise ValueError(
                f"{where}: expected kwargs[{i}] (for {iid!r}) to be a dict of the "
                f"instruction's arguments or None, got {type(kw).__name__} {kw!r}."
            )
    return [dict(kw or {}) for kw in kwargs]


def check_instructions(
    response: str, instruction_id_list: list[str], kwargs: list[dict[str, Any] | None]
) -> list[bool]:
    """Whether ``response`` follows each instruction (IFEval ids and their kwargs).

    A blank reply follows no instruction (IFEval's rule): saying nothing never meets
    "no commas", "fewer than 50 words" or "avoid the word x".

    Raises:
        ValueError: an instruction id this module does not check, ``kwargs`` that is not a
            list of one dict (or ``None``) per instruction, or kwargs that do not fit.

    Examples:
        >>> from rl_llm.envs.ifeval import check_instructions
        >>> check_instructions("all lower, no caps", ["change_case:english_lowercase",
        ...     "punctuation:no_comma"], [{}, {}])
        [True, False]
        >>> check_instructions(" ", ["punctuation:no_comma"], [{}])
        [False]
    """
    out = []
    for iid, kw in zip(instruction_id_list, _instruction_kwargs(instruction_id_list, kwargs)):
        check = IFEVAL_CHECKS.get(iid)
        if check is None:
            raise ValueError(
                f"IfEvalScorer: unknown instruction id {iid!r}; the checked ones are "
                f"{sorted(IFEVAL_CHECKS)}."
            )
        kw = {k: v for k, v in kw.items() if v is not None}
        try:
            out.append(bool(check(response, **kw)) and bool(response.strip()))
        except TypeError as err:
            raise ValueError(f"IfEvalScorer: bad kwargs {kw!r} for {iid!r}: {err}.") from None
    return out


class IfEvalScorer(RewardParserBase):
    """Rewards a reply by the fraction of its instructions it follows (IFEval's checks).

    The reference at ``"answer"`` is JSON ``{"instruction_id_list": [...], "kwargs": [...]}``
    (what :class:`IFEvalEnv` writes). Reward: ``correct_reward * fraction followed``;
    ``"success"`` marks replies that follow every instruction (IFEval's strict accuracy).
    A reply is always "answered": with ``set_done_if_answer`` every dialog ends.

    Args:
        correct_reward: the reward of a reply that follows every instruction (1.0).
        set_done_if_answer: end the dialogs after the scored reply (default True).

    Examples:
        >>> import json
        >>> from rl_llm.envs import IfEvalScorer
        >>> ref = json.dumps({"instruction_id_list": ["punctuation:no_comma",
        ...     "startend:end_checker"], "kwargs": [{}, {"end_phrase": "Bye."}]})
        >>> IfEvalScorer().score("Hello there. Bye.", ref), IfEvalScorer().score("Hi, all", ref)
        ((1.0, True), (0.0, True))
    """

    def __init__(
        self, *, correct_reward: float = 1.0, set_done_if_answer: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(
            format_reward=0.0,
            correct_reward=correct_reward,
            set_done_if_answer=set_done_if_answer,
            **kwargs,
        )

    def score(self, response: str, answer: str) -> tuple[float, bool]:
        try:
            data = json.loads(answer)
            ids, kwargs = data["instruction_id_list"], data["kwargs"]
        except (ValueError, KeyError, TypeError):
            raise ValueError(
                f"IfEvalScorer: expected the answer as JSON with 'instruction_id_list' and "
                f"'kwargs', got {answer!r}."
            ) from None
        followed = check_instructions(response, ids, kwargs)
        return self.correct_reward * sum(followed) / max(len(followed), 1), True


class IFEvalEnv(TransformedEnv):
    """A single-turn chat env over IFEval-style prompts, rewarded by :class:`IfEvalScorer`.

    Items are dicts with ``"prompt"``, ``"instruction_id_list"`` and ``"kwargs"`` (the fields
    of the IFEval dataset); the instructions are written as JSON at ``"answer"``. After the
    reply the reward is the fraction of instructions followed and every dialog ends.

    A composition: a :class:`DatasetChatEnv` (``env.base_env``) seen through
    ``Compose(IfEvalScorer(...), EndOfDialog())`` (``env.transform``).

    Args:
        dataset: an iterable of IFEval items (list, ``datasets.Dataset``).
        batch_size: ``(B,)``, a multiple of ``repeats``.
        repeats: dialogs per prompt.
        system_prompt: the first message of every dialog (none by default).
        **kwargs: passed to :class:`DatasetChatEnv` (``shuffle``, ``seed``, ``tokenizer``).

    Examples:
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import IFEvalEnv
        >>> item = {"prompt": "Greet me without commas.",
        ...     "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
        >>> env = IFEvalEnv([item], batch_size=(2,), repeats=2)
        >>> td = env.reset()
        >>> td["history"].full = td["history"].prompt.append(History.from_chats(
        ...     [[{"role": "assistant", "content": r}] for r in ["Hello friend", "Hi, you"]]))
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
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> None:
        env = DatasetChatEnv(
            [self._as_item(x) for x in dataset],
            batch_size=batch_size,
            repeats=repeats,
            system_prompt=system_prompt,
            **kwargs,
        )
        super().__init__(env, Compose(IfEvalScorer(set_done_if_answer=False), EndOfDialog()))

    @staticmethod
    def _as_item(item: Any) -> dict[str, str]:
        if not isinstance(item, dict) or not {"prompt", "instruction_id_list"} <= set(item):
            raise ValueError(
                f"IFEvalEnv: expected items with 'prompt', 'instruction_id_list' and 'kwargs', "
                f"got {item!r}."
            )
        ids = list(item["instruction_id_list"])
        kwargs = _instruction_kwargs(ids, item.get("kwargs", [{}] * len(ids)), where="IFEvalEnv")
        unknown = [i for i in ids if i not in IFEVAL_CHECKS]
        if unknown:
            raise ValueError(
                f"IFEvalEnv: unknown instruction ids {unknown}; the checked ones are "
                f"{sorted(IFEVAL_CHECKS)}."
            )
        return {
            "question": item["prompt"],
            "answer": json.dumps({"instruction_id_list": ids, "kwargs": kwargs}),
        }
