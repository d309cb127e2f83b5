"""DatasetChatEnv: a ChatEnv whose resets draw queries (and answers) from a dataset."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_llm.envs.chat_env import ChatEnv
from rl_llm.keys import ANSWER, QUERY


class DatasetChatEnv(ChatEnv):
    """A ChatEnv fed by any iterable of prompts: a list of strings or dicts, or a ``datasets.Dataset``.

    Each reset draws ``B // repeats`` items (in order, or shuffled per epoch with ``shuffle``)
    and repeats each one ``repeats`` times in a row, so a batch holds groups of identical
    prompts (what group-relative advantages need). ``"query"`` and, when items carry one,
    ``"answer"`` are written beside the history.

    Args:
        dataset: strings, or dicts with ``question_key`` (and optionally ``answer_key``).
        batch_size: the number of dialogs ``(B,)``; a multiple of ``repeats``.
        repeats: how many dialogs share each prompt.
        system_prompt: the first message of every dialog.
        tokenizer: kept for transforms.
        question_key: the key of the prompt in dict items.
        answer_key: the key of the reference answer in dict items.
        shuffle: reshuffle the items every epoch.
        seed: seeds the shuffling.

    Examples:
        >>> from rl_llm.envs import DatasetChatEnv
        >>> env = DatasetChatEnv(["a", "b", "c"], batch_size=(4,), repeats=2)
        >>> list(env.reset()["query"])
        ['a', 'a', 'b', 'b']
        >>> list(env.reset()["query"])
        ['c', 'c', 'a', 'a']
    """

    def __init__(
        self,
        dataset: Iterable[Any],
        *,
        batch_size: tuple[int, ...] | torch.Size = (1,),
        repeats: int = 1,
        system_prompt: str | None = None,
        tokenizer: Any = None,
        question_key: str = "question",
        answer_key: str = "answer",
        shuffle: bool = False,
        seed: int = 0,
    ) -> None:
        super().__init__(tokenizer=tokenizer, system_prompt=system_prompt, batch_size=batch_size)
        if repeats < 1 or self.batch_size[0] % repeats:
            raise ValueError(
                f"{type(self).__name__}: expected batch size {self.batch_size[0]} to be a "
                f"multiple of repeats, got repeats={repeats}."
            )
        self.items = [self._item(x, question_key, answer_key) for x in dataset]
        if not self.items:
            raise ValueError(f"{type(self).__name__}: the dataset is empty.")
        self.repeats = repeats
        self.shuffle = shuffle
        self._set_seed(seed)
        self._order: list[int] = []

    def _item(self, item: Any, question_key: str, answer_key: str) -> tuple[str, Any]:
        if isinstance(item, str):
            return item, None
        if isinstance(item, dict) and question_key in item:
            return item[question_key], item.get(answer_key)
        raise ValueError(
            f"{type(self).__name__}: expected dataset items as strings or dicts with "
            f"{question_key!r}, got {item!r}. Pass question_key= to name the prompt field."
        )

    def _next_index(self) -> int:
        if not self._order:
            n = len(self.items)
            perm = torch.randperm(n, generator=self._rng) if self.shuffle else torch.arange(n)
            self._order = perm.tolist()[::-1]
        return self._order.pop()

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        drawn = [self.items[self._next_index()] for _ in range(self.batch_size[0] // self.repeats)]
        queries = [q for q, _ in drawn for _ in range(self.repeats)]
        answers = [a for _, a in drawn for _ in range(self.repeats)]
        out = super()._reset(TensorDict({QUERY: queries}, batch_size=self.batch_size))
        out.set(QUERY, queries)
        if any(a is not None for a in answers):
            out.set(ANSWER, [str(a) for a in answers])
        return out
