"""GRPOLoss: clipped policy-gradient loss with group-relative advantages for LLM policies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_llm.keys import ADVANTAGE, LOG_PROBS, MASKS, REF_LOG_PROBS, TOKENS
from rl_llm.modules._log_probs import masked_mean
from rl_llm.objectives.distillation import k3_kl_token_estimate
from rl_llm.objectives.loss_outputs import GRPOLossOutput, LLMLossOutput


def _clip_bounds(clip_epsilon: float | tuple[float, float], where: str) -> tuple[float, float]:
    """``(low, high)`` of a clip range given as ``eps`` or ``(eps_low, eps_high)``."""
    pair = clip_epsilon if isinstance(clip_epsilon, (tuple, list)) else (clip_epsilon,) * 2
    ok = len(pair) == 2 and all(
        isinstance(e, (int, float)) and not isinstance(e, bool) for e in pair
    )
    if ok:
        low, high = float(pair[0]), float(pair[1])
        ok = low > 0.0 and high > 0.0
    if not ok:
        raise ValueError(
            f"{where}: expected clip_epsilon > 0 (a float, or a pair (eps_low, eps_high) of "
            f"floats > 0), got {clip_epsilon!r}."
        )
    return low, high


def _aggregate(per_token: torch.Tensor, mask: torch.Tensor, aggregation: str) -> torch.Tensor:
    """Token-level mean over the batch, or mean per response then over responses."""
    if aggregation == "token":
        return masked_mean(per_token, mask)
    return masked_mean(per_token, mask, dim=-1).mean()


def _effective_sample_size(log_weight: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(sum w)^2 / (n * sum w^2)`` of the importance weights ``w`` of the ``n`` masked tokens."""
    w = log_weight.detach().exp() * mask
    n = mask.sum().clamp(min=1)
    return w.sum().pow(2) / (n * w.pow(2).sum()).clamp(min=torch.finfo(w.dtype).tiny)


def grpo_objective(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantage: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_epsilon: float | tuple[float, float],
    aggregation: str = "token",
) -> tuple[torch.Tensor, torch.Tensor]:
    """The clipped surrogate loss ``-min(rA, clip(r, 1 - eps_low, 1 + eps_high)A)``.

    Args:
        log_probs: ``[B, T]`` log-probabilities under the current policy (with gradients).
        old_log_probs: ``[B, T]`` log-probabilities under the policy that sampled the tokens.
        advantage: ``[B, 1]`` (or ``[B]``) one advantage per response.
        mask: ``[B, T]`` bool, True on response tokens.
        clip_epsilon: the ratio clipping range, ``eps`` (``[1 - eps, 1 + eps]``) or
            ``(eps_low, eps_high)`` (``[1 - eps_low, 1 + eps_high]``, DAPO's Clip-Higher).
        aggregation: ``"token"`` (mean over all response tokens of the batch) or
            ``"sequence"`` (mean per response, then over responses).

    Returns:
        ``(loss, clip_fraction)``, two scalars; ``clip_fraction`` is the share of response
        tokens whose ratio lies outside the clip range.

    Examples:
        >>> import torch
        >>> from rl_llm.objectives import grpo_objective
        >>> lp, old = torch.tensor([[0.5, 0.0]]), torch.zeros(1, 2)
        >>> loss, frac = grpo_objective(lp, old, torch.ones(1, 1), torch.ones(1, 2, dtype=bool),
        ...     clip_epsilon=(0.2, 0.28))
        >>> round(loss.item(), 4), frac.item()
        (-1.14, 0.5)
    """
    low, high = _clip_bounds(clip_epsilon, "grpo_objective")
    advantage = advantage.reshape(-1, 1)
    ratio = (log_probs - old_log_probs).exp()
    unclipped = ratio * advantage
    clipped = ratio.clamp(1.0 - low, 1.0 + high) * advantage
    surrogate = torch.minimum(unclipped, clipped)
    outside = (ratio < 1.0 - low) | (ratio > 1.0 + high)
    clip_fraction = masked_mean(outside.to(log_probs.dtype), mask)
    return -_aggregate(surrogate, mask, aggregation), clip_fraction


class GRPOLoss(LossModule):
    """Group Relative Policy Optimization loss for a language-model policy.

    Reads a batch written by a generating policy and :class:`MCAdvantage`: ``("tokens",
    "prompt")``, ``("tokens", "response")``, ``("masks", ...)``, the sampling log-probs
    ``("log_probs", "response")`` and ``"advantage"`` (``[B, 1]``). It recomputes the response
    log-probs with ``actor_network`` (a :class:`~rl_llm.modules.TransformersWrapper`; its
    ``log_probs_of`` runs with gradients) and returns:

    - ``loss_objective``: the clipped surrogate (:func:`grpo_objective`);
    - ``loss_kl_to_ref`` (if ``kl_to_ref_coeff``): ``coeff * mean k3``, the k3 estimate
      (:func:`k3_kl_token_estimate`) of KL(new || ref), reading ``"ref_log_probs"``
      (``[B, T]``, e.g. written by :class:`~rl_llm.envs.KLRewardTransform`);
    - ``loss_entropy`` (if ``entropy_coeff``): ``-coeff * mean entropy``;
    - diagnostics: ``clip_fraction``, ``kl_approx`` (mean of old - new), ``ESS``, ``entropy``.

    The output is a :class:`GRPOLossOutput` (a TensorDict whose fields are also attributes).
    Subclasses change the policy objective by overriding :meth:`objective` (:class:`CISPOLoss`)
    or the defaults (:class:`DAPO`).

    Args:
        actor_network: the policy, with a ``log_probs_of(full, attention_mask, *, last=...)``
            method (:class:`~rl_llm.modules.TransformersWrapper`).
        clip_epsilon: the ratio clipping range, ``eps`` or ``(eps_low, eps_high)``.
        kl_to_ref_coeff: weight of the KL penalty to the reference model, or ``None``.
        entropy_coeff: weight of the entropy bonus.
        aggregation: ``"token"`` or ``"sequence"`` (see :func:`grpo_objective`).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import History
        >>> from rl_llm.modules import TransformersWrapper
        >>> from rl_llm.objectives import GRPOLoss
        >>> from rl_llm.testing import build_tiny_chat_model
        >>> model, tokenizer = build_tiny_chat_model()
        >>> policy = TransformersWrapper(model, tokenizer, generate_kwargs={"max_new_tokens": 4})
        >>> prompt = History.from_chats([[{"role": "user", "content": "hi"}]] * 2)
        >>> batch = policy(TensorDict(history={"prompt": prompt}, batch_size=[2]))
        >>> batch["advantage"] = torch.tensor([[1.0], [-1.0]])
        >>> out = GRPOLoss(policy, clip_epsilon=0.2)(batch)
        >>> out["loss_objective"].shape, out["loss_objective"].requires_grad
        (torch.Size([]), True)
    """

    @dataclass
    class _AcceptedKeys:
        advantage: NestedKey = ADVANTAGE
        prompt_tokens: NestedKey = (TOKENS, "prompt")
        response_tokens: NestedKey = (TOKENS, "response")
        attention_mask: NestedKey = (MASKS, "all_attention_mask")
        assistant_mask: NestedKey = (MASKS, "all_assistant_mask")
        sample_log_probs: NestedKey = (LOG_PROBS, "response")
        ref_log_probs: NestedKey = REF_LOG_PROBS

    output_type: type[LLMLossOutput] = GRPOLossOutput

    def __init__(
        self,
        actor_network: Any,
        *,
        clip_epsilon: float | tuple[float, float] = 0.2,
        kl_to_ref_coeff: float | None = None,
        entropy_coeff: float = 0.0,
        aggregation: str = "token",
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if aggregation not in ("token", "sequence"):
            raise ValueError(
                f"{name}: expected aggregation 'token' or 'sequence', got {aggregation!r}."
            )
        self.clip_bounds = _clip_bounds(clip_epsilon, name)
        self.actor_network = actor_network
        self.clip_epsilon = clip_epsilon
        self.kl_to_ref_coeff = kl_to_ref_coeff
        self.entropy_coeff = entropy_coeff
        self.aggregation = aggregation

    def _get(self, td: TensorDictBase, name: str) -> torch.Tensor:
        key = getattr(self.tensor_keys, name)
        value = td.get(key, None)
        if value is None:
            raise KeyError(
                f"{type(self).__name__}: expected the entry {key!r} ({name}) in the batch. Collect with a "
                f"generating policy and apply MCAdvantage first, or rename it with set_keys."
            )
        return value

    def objective(
        self,
        log_probs: torch.Tensor,
        old_log_probs: torch.Tensor,
        advantage: torch.Tensor,
        mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy objective and its clip fraction (:func:`grpo_objective` here)."""
        return grpo_objective(
            log_probs,
            old_log_probs,
            advantage,
            mask,
            clip_epsilon=self.clip_bounds,
            aggregation=self.aggregation,
        )

    def forward(self, tensordict: TensorDictBase) -> LLMLossOutput:
        prompt = self._get(tensordict, "prompt_tokens")
        response = self._get(tensordict, "response_tokens")
        attn = self._get(tensordict, "attention_mask")
        full_mask = self._get(tensordict, "assistant_mask")
        old = self._get(tensordict, "sample_log_probs")
        advantage = self._get(tensordict, "advantage")
        width = response.shape[-1]
        mask = full_mask[:, -width:]
        full = torch.cat([prompt, response], -1)
        if self.entropy_coeff:
            lp, entropy = self.actor_network.log_probs_of(
                full, attn, return_entropy=True, last=width
            )
        else:
            lp, entropy = self.actor_network.log_probs_of(full, attn, last=width), None
        loss, clip_fraction = self.objective(lp, old, advantage, mask)
        out = self.output_type(
            loss_objective=loss,
            clip_fraction=clip_fraction.detach(),
            kl_approx=masked_mean(old - lp, mask).detach(),
            ESS=_effective_sample_size(lp - old, mask),
        )
        if self.kl_to_ref_coeff:
            ref = self._get(tensordict, "ref_log_probs")
            kl = masked_mean(k3_kl_token_estimate(lp, ref), mask)
            out.set("loss_kl_to_ref", self.kl_to_ref_coeff * kl)
            out.set("kl_to_ref", kl.detach())
        if entropy is not None:
            mean_entropy = masked_mean(entropy, mask)
            out.set("loss_entropy", -self.entropy_coeff * mean_entropy)
            out.set("entropy", mean_entropy.detach())
        return out
