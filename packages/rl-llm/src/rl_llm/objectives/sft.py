"""SFTLoss: supervised fine-tuning on the assistant tokens of chat histories, and the two
objectives it can use as pure functions (``sft_loss``, ``minor_sft_loss``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_llm.keys import HISTORY, LOG_PROBS, MASKS
from rl_llm.modules._log_probs import masked_mean
from rl_llm.objectives.loss_outputs import SFTLossOutput

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss: torch.Tensor, reduction: str, where: str) -> torch.Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{where}: expected reduction in {_REDUCTIONS}, got {reduction!r}.")


def sft_loss(summed_log_probs: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """The SFT loss of sequences: minus their log-likelihoods, reduced.

    Args:
        summed_log_probs: ``[B]`` log-likelihood of each sequence's trained tokens (their
            summed log-probs, or the mean per token).
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (``[B]``).

    Raises:
        ValueError: an unknown reduction.

    Examples:
        >>> import torch
        >>> from rl_llm.objectives import sft_loss
        >>> sft_loss(torch.tensor([-1.0, -3.0])).item(), sft_loss(torch.tensor([-1.0, -3.0]), "sum").item()
        (2.0, 4.0)
    """
    return _reduce(-summed_log_probs, reduction, "sft_loss")


def minor_sft_loss(
    log_probs: torch.Tensor,
    ref_log_probs: torch.Tensor,
    beta: float = 0.1,
    reduction: str = "mean",
) -> torch.Tensor:
    """MinorSFT (Xie et al. 2024): ``-log sigmoid(beta * (log_probs - ref_log_probs))``.

    A DPO-like fine-tuning objective whose gradient fades as the policy moves above the
    reference on the trained sequences, so it drifts less from the reference than SFT.

    Args:
        log_probs: ``[B]`` log-likelihood of each sequence under the trained model.
        ref_log_probs: the same under the reference model (same shape).
        beta: the inverse temperature of the log-ratio.
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (``[B]``).

    Raises:
        ValueError: the two shapes differ, or an unknown reduction.

    Examples:
        >>> import torch
        >>> from rl_llm.objectives import minor_sft_loss
        >>> round(minor_sft_loss(torch.tensor([0.0]), torch.tensor([0.0])).item(), 4)  # log 2
        0.6931
    """
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError(
            f"minor_sft_loss: expected log_probs and ref_log_probs of one shape, got "
            f"{tuple(log_probs.shape)} and {tuple(ref_log_probs.shape)}."
        )
    loss = -torch.nn.functional.logsigmoid(beta * (log_probs - ref_log_probs))
    return _reduce(loss, reduction, "minor_sft_loss")


class SFTLoss(LossModule):
    """Negative log-likelihood of the assistant messages of ``("history", "full")``.

    The actor (a :class:`~rl_llm.modules.TransformersWrapper` with ``generate=False`` and
    ``input_mode="history"``) renders each dialog with its chat template and scores it; only
    tokens inside assistant turns (the template's ``{% generation %}`` blocks, end-of-turn
    marker included) count: system, user and tool tokens are masked out. The output is an
    :class:`SFTLossOutput`.

    With ``loss_function="minor_sft"`` the loss is :func:`minor_sft_loss` of each dialog's
    mean log-prob per trained token against the reference's (read at ``ref_log_prob``,
    ``("ref_log_probs", "full")`` as :class:`~rl_llm.envs.RetrieveLogProb` writes it over the
    same tokens), reduced by ``reduction``.

    Args:
        actor_network: the scoring policy.
        assistant_only: mask everything but assistant tokens (True) or train on every token.
        loss_function: ``"sft"`` (the mean negative log-likelihood per token) or
            ``"minor_sft"``.
        beta: MinorSFT's inverse temperature.
        reduction: MinorSFT's reduction over dialogs (``"mean"``, ``"sum"``, ``"none"``).

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import History
        >>> from rl_llm.modules import TransformersWrapper
        >>> from rl_llm.objectives import SFTLoss
        >>> from rl_llm.testing import build_tiny_chat_model
        >>> model, tokenizer = build_tiny_chat_model()
        >>> chats = History.from_chats([[{"role": "user", "content": "2+2?"},
        ...     {"role": "assistant", "content": "<answer>4</answer>"}]])
        >>> loss = SFTLoss(TransformersWrapper(model, tokenizer, generate=False))
        >>> out = loss(TensorDict(history={"full": chats}, batch_size=[1]))
        >>> out["loss_sft"].item() > 0, int(out["num_tokens"])
        (True, 8)
    """

    @dataclass
    class _AcceptedKeys:
        history: NestedKey = (HISTORY, "full")
        ref_log_prob: NestedKey = ("ref_log_probs", "full")

    def __init__(
        self,
        actor_network: Any,
        *,
        assistant_only: bool = True,
        loss_function: str = "sft",
        beta: float = 0.1,
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        if getattr(actor_network, "generate", False):
            raise ValueError(
                "SFTLoss: expected a scoring actor (TransformersWrapper(..., generate=False)), "
                "got one that generates."
            )
        if loss_function not in ("sft", "minor_sft") or reduction not in _REDUCTIONS:
            raise ValueError(
                f"SFTLoss: expected loss_function in ('sft', 'minor_sft') and reduction in "
                f"{_REDUCTIONS}, got {loss_function!r} and {reduction!r}."
            )
        self.actor_network = actor_network
        self.assistant_only = assistant_only
        self.loss_function = loss_function
        self.beta = float(beta)
        self.reduction = reduction

    def forward(self, tensordict: TensorDictBase) -> SFTLossOutput:
        history = tensordict.get(self.tensor_keys.history, None)
        if history is None:
            raise KeyError(f"SFTLoss: expected the chat histories at {self.tensor_keys.history!r}.")
        scored = self.actor_network(
            TensorDict({HISTORY: {"full": history}}, batch_size=tensordict.batch_size)
        )
        lp = scored.get((LOG_PROBS, "full"))
        if self.assistant_only:
            mask = scored.get((MASKS, "all_assistant_mask"))
        else:
            mask = scored.get((MASKS, "all_attention_mask")).clone()
            # The first real token of each row has no context.
            first = mask.int().argmax(-1)
            mask[range(mask.shape[0]), first] = False
        num_tokens = mask.sum().detach()
        if self.loss_function == "sft":
            return SFTLossOutput(loss_sft=-masked_mean(lp, mask), num_tokens=num_tokens)
        ref = tensordict.get(self.tensor_keys.ref_log_prob, None)
        if ref is None or ref.shape != lp.shape:
            got = "nothing" if ref is None else f"shape {tuple(ref.shape)}"
            raise KeyError(
                f"SFTLoss(loss_function='minor_sft'): expected the reference log-probs at "
                f"{self.tensor_keys.ref_log_prob!r} with the shape of the actor's "
                f"{tuple(lp.shape)}, got {got}. Run RetrieveLogProb(ref_model) over the same "
                f"histories first."
            )
        loss = minor_sft_loss(
            masked_mean(lp, mask, dim=-1),
            masked_mean(ref.to(lp), mask, dim=-1),
            self.beta,
            self.reduction,
        )
        return SFTLossOutput(loss_sft=loss, num_tokens=num_tokens)
