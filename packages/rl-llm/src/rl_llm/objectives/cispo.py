"""CISPOLoss: policy gradient with clipped, detached importance-sampling weights (MiniMax-M1)."""

from __future__ import annotations

import torch

from rl_llm.modules._log_probs import masked_mean
from rl_llm.objectives.grpo import GRPOLoss, _aggregate, _clip_bounds
from rl_llm.objectives.loss_outputs import CISPOLossOutput, LLMLossOutput


def cispo_objective(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantage: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_epsilon: float | tuple[float, float],
    aggregation: str = "token",
) -> tuple[torch.Tensor, torch.Tensor]:
    """CISPO's objective ``-sg(clip(r, 1 - eps_low, 1 + eps_high)) * A * log pi``.

    MiniMax-M1 (2025), Eq. 4: the importance weight ``r = exp(log_probs - old_log_probs)`` is
    clipped and detached, so every token keeps its gradient ``clip(r) * A * grad log pi``
    (a clipped token of PPO/GRPO gets none). Shapes and ``aggregation`` as in
    :func:`grpo_objective`; the paper's loss is the token-level mean (``"token"``).

    Returns:
        ``(loss, clip_fraction)``, two scalars; ``clip_fraction`` is the share of response
        tokens whose weight was clipped.

    Examples:
        >>> import torch
        >>> from rl_llm.objectives import cispo_objective
        >>> lp = torch.tensor([[-1.0]], requires_grad=True)
        >>> loss, frac = cispo_objective(lp, torch.tensor([[-2.0]]), torch.ones(1, 1),
        ...     torch.ones(1, 1, dtype=bool), clip_epsilon=(1.0, 0.28))
        >>> loss.backward(); lp.grad.item(), frac.item()
        (-1.2799999713897705, 1.0)
    """
    low, high = _clip_bounds(clip_epsilon, "cispo_objective")
    advantage = advantage.reshape(-1, 1)
    ratio = (log_probs - old_log_probs).detach().exp()
    weight = ratio.clamp(1.0 - low, 1.0 + high)
    clip_fraction = masked_mean((weight != ratio).to(log_probs.dtype), mask)
    return -_aggregate(weight * advantage * log_probs, mask, aggregation), clip_fraction


class CISPOLoss(GRPOLoss):
    """CISPO (MiniMax-M1, 2025): GRPO's pipeline with :func:`cispo_objective` as the objective.

    Same arguments, entries and diagnostics as :class:`GRPOLoss` (the KL and entropy terms
    included); the policy objective clips and detaches the importance weight instead of
    clipping the update. The paper sets no lower bound: ``clip_epsilon=(1.0, eps_high)``
    (a weight is never below 0). The output is a :class:`CISPOLossOutput`. ``loss_objective``
    has CISPO's gradient; its value is not the GRPO surrogate's.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import History
        >>> from rl_llm.modules import TransformersWrapper
        >>> from rl_llm.objectives import CISPOLoss
        >>> from rl_llm.testing import build_tiny_chat_model
        >>> model, tokenizer = build_tiny_chat_model()
        >>> policy = TransformersWrapper(model, tokenizer, generate_kwargs={"max_new_tokens": 4})
        >>> prompt = History.from_chats([[{"role": "user", "content": "hi"}]] * 2)
        >>> batch = policy(TensorDict(history={"prompt": prompt}, batch_size=[2]))
        >>> batch["advantage"] = torch.tensor([[1.0], [-1.0]])
        >>> out = CISPOLoss(policy, clip_epsilon=(1.0, 0.28))(batch)
        >>> type(out).__name__, out.loss_objective.requires_grad
        ('CISPOLossOutput', True)
    """

    output_type: type[LLMLossOutput] = CISPOLossOutput

    def objective(
        self,
        log_probs: torch.Tensor,
        old_log_probs: torch.Tensor,
        advantage: torch.Tensor,
        mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy objective and its clip fraction (:func:`cispo_objective`)."""
        return cispo_objective(
            log_probs,
            old_log_probs,
            advantage,
            mask,
            clip_epsilon=self.clip_bounds,
            aggregation=self.aggregation,
        )
