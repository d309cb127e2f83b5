"""IFEvalData: one IFEval prompt with its instructions (and, once answered, the reply)."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorClass

from rl_llm.envs.ifeval import check_instructions
from rl_llm.envs.ifeval_score import IFEvalScoreData


class IFEvalData(TensorClass["nocast"]):
    """An IFEval row: ``key``, ``instruction_id_list``, ``kwargs``, ``query`` (the prompt),
    and optionally ``response``, ``tokens``, ``tokens_response``, ``logits``, ``reward``.

    :meth:`from_item` reads a row of the IFEval data set (``"key"``, ``"prompt"``,
    ``"instruction_id_list"``, ``"kwargs"``), checking that every instruction is one
    :class:`IfEvalScorer` checks; :meth:`to_item` gives the dict :class:`IFEvalEnv` reads;
    :meth:`score` scores the ``response`` (:class:`IFEvalScoreData`).

    Examples:
        >>> from rl_llm.envs import IFEvalData
        >>> row = IFEvalData.from_item({"key": 7, "prompt": "Greet me without commas.",
        ...     "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]})
        >>> row.response = "Hello friend"
        >>> bool(row.score().prompt_level_strict_acc), row.to_item()["instruction_id_list"]
        (True, ['punctuation:no_comma'])
    """

    key: torch.Tensor
    instruction_id_list: list
    kwargs: list
    query: str
    response: str | None = None
    tokens: torch.Tensor | None = None
    tokens_response: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    reward: torch.Tensor | None = None

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> IFEvalData:
        """One row (batch ``[]``) from an IFEval item.

        Raises:
            ValueError: the item lacks ``"prompt"`` or ``"instruction_id_list"``, an
                instruction is not checked here, or its kwargs do not fit.
        """
        if not isinstance(item, dict) or not {"prompt", "instruction_id_list"} <= set(item):
            raise ValueError(
                f"IFEvalData.from_item: expected an item with 'prompt', 'instruction_id_list' "
                f"and 'kwargs', got {item!r}."
            )
        ids = [str(i) for i in item["instruction_id_list"]]
        kwargs = list(item.get("kwargs", [{}] * len(ids)))
        check_instructions("", ids, kwargs)  # refuses unknown ids and kwargs that do not fit
        return cls(
            key=torch.tensor(int(item.get("key", 0))),
            instruction_id_list=ids,
            kwargs=kwargs,
            query=str(item["prompt"]),
            batch_size=[],
        )

    def to_item(self) -> dict[str, Any]:
        """The row as :class:`IFEvalEnv` reads it."""
        return {
            "key": int(self.key),
            "prompt": self.query,
            "instruction_id_list": list(self.instruction_id_list),
            "kwargs": [dict(k) if k is not None else None for k in self.kwargs],
        }

    def score(self) -> IFEvalScoreData:
        """IFEval's scores of ``response``.

        Raises:
            ValueError: the row has no response yet.
        """
        if self.response is None:
            raise ValueError("IFEvalData.score: expected a response to score, got None.")
        return IFEvalScoreData.from_reply(
            self.response, list(self.instruction_id_list), list(self.kwargs)
        )
