"""IFEvalScoreData: IFEval's four accuracies of a reply, strict and loose."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorClass

from rl_llm.envs.ifeval import check_instructions


def loose_variants(response: str) -> list[str]:
    """The reply and the variants IFEval's loose accuracy also accepts.

    Without its first line, its last line or both, each also with ``*`` removed (markdown
    emphasis): a reply follows an instruction loosely when any non-empty variant does.
    """
    lines = response.split("\n")
    cuts = [
        response,
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    ]
    return cuts + [c.replace("*", "") for c in cuts]


class IFEvalScoreData(TensorClass["nocast"]):
    """IFEval's scores of replies (Zhou et al. 2023): per reply, strict and loose.

    - ``prompt_level_strict_acc`` / ``prompt_level_loose_acc``: ``[*B]`` bool, every
      instruction followed;
    - ``inst_level_strict_acc`` / ``inst_level_loose_acc``: ``[*B]`` float, the fraction of
      the reply's instructions followed (IFEval's instruction-level accuracy of a batch
      weighs each instruction: ``(frac * n).sum() / n.sum()`` with ``num_instructions``);
    - ``num_instructions``: ``[*B]`` int64.

    Strict checks the reply as written; loose also accepts a reply that follows an instruction
    once its first or last line is dropped or its ``*`` are removed (:func:`loose_variants`).
    The checks are :class:`IfEvalScorer`'s; every reply is scored, never raised.

    Examples:
        >>> from rl_llm.envs import IFEvalScoreData
        >>> s = IFEvalScoreData.from_reply("Sure:\\nall lower here", ["change_case:english_lowercase"], [{}])
        >>> bool(s.prompt_level_strict_acc), bool(s.prompt_level_loose_acc)
        (False, True)
    """

    prompt_level_strict_acc: torch.Tensor
    inst_level_strict_acc: torch.Tensor
    prompt_level_loose_acc: torch.Tensor
    inst_level_loose_acc: torch.Tensor
    num_instructions: torch.Tensor

    @classmethod
    def from_reply(
        cls, response: str, instruction_id_list: list[str], kwargs: list[dict[str, Any] | None]
    ) -> IFEvalScoreData:
        """The scores of one reply (batch ``[]``).

        Raises:
            ValueError: an instruction id that is not checked, or kwargs that do not fit
                (see :func:`~rl_llm.envs.ifeval.check_instructions`).
        """
        strict = check_instructions(response, instruction_id_list, kwargs)
        loose = list(strict)
        for variant in loose_variants(response)[1:]:
            if variant.strip():
                loose = [
                    a or b
                    for a, b in zip(loose, check_instructions(variant, instruction_id_list, kwargs))
                ]
        n = len(strict)
        return cls(
            prompt_level_strict_acc=torch.tensor(all(strict)),
            inst_level_strict_acc=torch.tensor(sum(strict) / n if n else 1.0),
            prompt_level_loose_acc=torch.tensor(all(loose)),
            inst_level_loose_acc=torch.tensor(sum(loose) / n if n else 1.0),
            num_instructions=torch.tensor(n),
            batch_size=[],
        )
