"""RewardModelLoss: the Bradley-Terry pairwise loss that trains a scalar reward model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase

from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_llm.objectives.loss_outputs import RewardModelLossOutput

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(value: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return value.mean()
    if reduction == "sum":
        return value.sum()
    return value


def reward_model_loss(
    chosen_scores: torch.Tensor, rejected_scores: torch.Tensor, reduction: str = "mean"
) -> torch.Tensor:
    """Bradley-Terry loss ``-log sigmoid(r_chosen - r_rejected)`` of ``[B]`` scores.

    Bradley and Terry (1952); the reward-model stage of Stiennon et al. (2020), Eq. 1.

    Args:
        chosen_scores: ``[B]`` scores of the preferred responses.
        rejected_scores: ``[B]`` scores of the other responses.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown reduction or two shapes.

    Examples:
        >>> import torch
        >>> from rl_llm.objectives import reward_model_loss
        >>> round(reward_model_loss(torch.tensor([1.0]), torch.tensor([1.0])).item(), 4)  # log 2
        0.6931
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"reward_model_loss: expected reduction in {_REDUCTIONS}, got {reduction!r}."
        )
    if chosen_scores.shape != rejected_scores.shape:
        raise ValueError(
            f"reward_model_loss: expected chosen and rejected scores of one shape, got "
            f"{tuple(chosen_scores.shape)} and {tuple(rejected_scores.shape)}."
        )
    return _reduce(-F.logsigmoid(chosen_scores - rejected_scores), reduction)


class RewardModelLoss(LossModule):
    """Trains a scalar reward model on preference pairs (:func:`reward_model_loss`).

    ``score_network`` (a TensorDict module, e.g. :class:`~rl_llm.modules.GPT2RewardModel`
    wrapped to read ``input_ids``/``attention_mask`` and write ``"score"``) scores the
    ``"chosen"`` and ``"rejected"`` sub-TensorDicts with the same weights (without one, the
    scores are read there). Returns a :class:`RewardModelLossOutput`: ``loss_reward_model``,
    ``loss_center`` (with ``center_coeff``: ``coeff * (r_c^2 + r_r^2)``, reduced the same way,
    which keeps the scores near 0) and ``accuracy`` (share of pairs ranked right, detached).

    Args:
        score_network: maps a sub-TensorDict to one score per row at ``"score"``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        center_coeff: weight of the centering term, or ``None``.
        device: unused (the network's device is used); kept for TorchRL's signature.

    Raises:
        ValueError: an unknown reduction.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.objectives import RewardModelLoss
        >>> td = TensorDict(chosen=TensorDict(score=torch.tensor([2.0, 0.0]), batch_size=[2]),
        ...     rejected=TensorDict(score=torch.tensor([0.0, 1.0]), batch_size=[2]), batch_size=[2])
        >>> out = RewardModelLoss()(td)
        >>> round(out.loss_reward_model.item(), 4), out.accuracy.item()
        (0.7201, 0.5)
    """

    @dataclass
    class _AcceptedKeys:
        chosen: NestedKey = "chosen"
        rejected: NestedKey = "rejected"
        score: NestedKey = "score"

    def __init__(
        self,
        score_network: Any = None,
        *,
        reduction: str = "mean",
        center_coeff: float | None = None,
        device: torch.device | None = None,
    ) -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"RewardModelLoss: expected reduction in {_REDUCTIONS}, got {reduction!r}."
            )
        self.score_network = score_network
        self.reduction = reduction
        self.center_coeff = center_coeff

    def _score(self, tensordict: TensorDictBase, name: str) -> torch.Tensor:
        key = getattr(self.tensor_keys, name)
        sub = tensordict.get(key, None)
        if sub is None:
            raise KeyError(f"RewardModelLoss: expected the {name} entries at {key!r} in the batch.")
        if self.score_network is not None:
            sub = self.score_network(sub)
        score = sub.get(self.tensor_keys.score, None)
        if score is None:
            raise KeyError(
                f"RewardModelLoss: expected a score at {(key, self.tensor_keys.score)!r}; give "
                f"a score_network that writes it, or precomputed scores."
            )
        return score.squeeze(-1) if score.ndim > 1 and score.shape[-1] == 1 else score

    def forward(self, tensordict: TensorDictBase) -> RewardModelLossOutput:
        chosen = self._score(tensordict, "chosen")
        rejected = self._score(tensordict, "rejected")
        out = RewardModelLossOutput(
            loss_reward_model=reward_model_loss(chosen, rejected, self.reduction),
            accuracy=(chosen > rejected).float().mean().detach(),
        )
        if self.center_coeff is not None:
            center = _reduce(chosen.pow(2) + rejected.pow(2), self.reduction)
            out.set("loss_center", self.center_coeff * center)
        return out
