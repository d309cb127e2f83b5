"""DistillationLoss: on-policy distillation of a student toward a teacher's token log-probs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_llm.keys import MASKS, TOKENS
from rl_llm.modules._log_probs import masked_mean
from rl_llm.objectives.loss_outputs import DistillationLossOutput

_REDUCTIONS = ("mean", "sum", "none")


def k3_kl_token_estimate(cur_log_prob: torch.Tensor, other_log_prob: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of ``KL(cur || other)`` from tokens sampled under ``cur``.

    With ``d = other - cur``: ``exp(d) - 1 - d`` (Schulman, "Approximating KL Divergence",
    2020). Each term is >= 0, zero exactly where the two log-probabilities agree, and its mean
    over tokens drawn from ``cur`` is an unbiased estimate of the KL.

    Args:
        cur_log_prob: log-probabilities of the sampled tokens under the trained policy.
        other_log_prob: log-probabilities of the same tokens under the reference (or the
            teacher), same shape.

    Returns:
        The per-token estimate, shaped like the inputs.

    Raises:
        ValueError: the two shapes differ.

    Examples:
        >>> import torch
        >>> from rl_llm.objectives import k3_kl_token_estimate
        >>> est = k3_kl_token_estimate(torch.tensor([0.0, -1.0]), torch.tensor([0.0, 0.0]))
        >>> [round(v, 6) for v in est.tolist()]  # e - 2 for the second token
        [0.0, 0.718282]
    """
    if cur_log_prob.shape != other_log_prob.shape:
        raise ValueError(
            f"k3_kl_token_estimate: expected two log-prob tensors of one shape, got "
            f"{tuple(cur_log_prob.shape)} and {tuple(other_log_prob.shape)}."
        )
    diff = other_log_prob - cur_log_prob
    return diff.expm1() - diff


class DistillationLoss(LossModule):
    """On-policy distillation: the k3 estimate of KL(student || teacher) on the student's tokens.

    The student generates (its tokens ``("tokens", "prompt"/"response")`` and masks are in the
    batch), the teacher scores those tokens (``[B, L]`` log-probs aligned with the full
    sequence at ``("teacher_log_probs", "full")``, written by
    :class:`~rl_llm.envs.RetrieveLogProb` built on the teacher with
    ``log_probs_full_key=("teacher_log_probs", "full")``), and the loss rescores the tokens
    with the student (``actor_network.log_probs_of``, with gradients). Per sequence it sums
    :func:`k3_kl_token_estimate` over the student's assistant tokens (divided by their count
    with ``normalize_by_seq_length``), reduces over the batch and scales by ``distill_coeff``.
    The gradient flows through the student's log-probs only (the sampling is not
    differentiated). A sequence without assistant tokens contributes 0.

    Args:
        actor_network: the student, with ``log_probs_of`` (a
            :class:`~rl_llm.modules.TransformersWrapper`).
        tokenizer: unused (the student's own tokens are read); kept for TorchRL's signature.
        tokenizer_kwargs: unused, kept for TorchRL's signature.
        distill_coeff: the scale of the loss.
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (one value per sequence) over the batch.
        normalize_by_seq_length: divide each sequence's sum by its number of assistant tokens.
        device: unused (the student's device is used); kept for TorchRL's signature.

    Raises:
        ValueError: ``reduction`` is not one of the three.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import History
        >>> from rl_llm.modules import TransformersWrapper
        >>> from rl_llm.objectives import DistillationLoss
        >>> from rl_llm.testing import build_tiny_chat_model
        >>> model, tokenizer = build_tiny_chat_model()
        >>> student = TransformersWrapper(model, tokenizer, generate_kwargs={"max_new_tokens": 4})
        >>> prompt = History.from_chats([[{"role": "user", "content": "hi"}]])
        >>> batch = student(TensorDict(history={"prompt": prompt}, batch_size=[1]))
        >>> batch["teacher_log_probs", "full"] = torch.zeros_like(batch["tokens"].full, dtype=torch.float)
        >>> out = DistillationLoss(student)(batch)
        >>> out.loss_distill.shape, bool(out.kl_to_teacher > 0)
        (torch.Size([]), True)
    """

    @dataclass
    class _AcceptedKeys:
        prompt_tokens: NestedKey = (TOKENS, "prompt")
        response_tokens: NestedKey = (TOKENS, "response")
        attention_mask: NestedKey = (MASKS, "all_attention_mask")
        assistant_mask: NestedKey = (MASKS, "all_assistant_mask")
        teacher_log_prob: NestedKey = ("teacher_log_probs", "full")

    def __init__(
        self,
        actor_network: Any,
        tokenizer: Any = None,
        tokenizer_kwargs: dict | None = None,
        *,
        distill_coeff: float = 1.0,
        reduction: str = "mean",
        normalize_by_seq_length: bool = True,
        device: torch.device | None = None,
    ) -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"DistillationLoss: expected reduction in {_REDUCTIONS}, got {reduction!r}."
            )
        self.actor_network = actor_network
        self.distill_coeff = distill_coeff
        self.reduction = reduction
        self.normalize_by_seq_length = normalize_by_seq_length

    def _get(self, td: TensorDictBase, name: str) -> torch.Tensor:
        key = getattr(self.tensor_keys, name)
        value = td.get(key, None)
        if value is None:
            raise KeyError(
                f"DistillationLoss: expected the entry {key!r} ({name}) in the batch. Generate "
                f"with the student and score with RetrieveLogProb(teacher, log_probs_full_key="
                f"{self.tensor_keys.teacher_log_prob!r}), or rename it with set_keys."
            )
        return value

    def forward(self, tensordict: TensorDictBase) -> DistillationLossOutput:
        prompt = self._get(tensordict, "prompt_tokens")
        response = self._get(tensordict, "response_tokens")
        attn = self._get(tensordict, "attention_mask")
        mask = attn & self._get(tensordict, "assistant_mask")
        teacher = self._get(tensordict, "teacher_log_prob")
        full = torch.cat([prompt, response], -1)
        if teacher.shape != full.shape:
            raise ValueError(
                f"DistillationLoss: expected teacher log-probs of the full sequence's shape "
                f"{tuple(full.shape)} at {self.tensor_keys.teacher_log_prob!r}, got "
                f"{tuple(teacher.shape)}. Score with RetrieveLogProb (it writes the full layout)."
            )
        student = self.actor_network.log_probs_of(full, attn)
        # Outside the mask the teacher's value is replaced by the student's own (estimate 0, no
        # gradient), so a padded position cannot overflow exp() and poison the backward pass.
        teacher = torch.where(mask, teacher.to(student.dtype), student.detach())
        k3 = k3_kl_token_estimate(student, teacher)
        per_sequence = k3.sum(-1)
        if self.normalize_by_seq_length:
            per_sequence = per_sequence / mask.sum(-1).clamp(min=1)
        if self.reduction == "mean":
            loss = per_sequence.mean()
        elif self.reduction == "sum":
            loss = per_sequence.sum()
        else:
            loss = per_sequence
        return DistillationLossOutput(
            loss_distill=self.distill_coeff * loss,
            kl_to_teacher=masked_mean(k3, mask).detach(),
        )
