"""GRPOLoss: clipped policy-gradient loss with group-relative advantages for LLM policies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_llm.keys import ADVANTAGE, LOG_PROBS, MASKS, REF_LOG_PROBS, TOKENS
from rl_llm.modules._log_probs import masked_mean


def grpo_objective(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantage: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_epsilon: float,
    aggregation: str = "token",
) -> tuple[torch.Tensor, torch.Tensor]:
    """The clipped surrogate loss ``-min(rA, clip(r, 1±eps)A)`` averaged over response tokens.

    Args:
        log_probs: ``[B, T]`` log-probabilities under the current policy (with gradients).
        old_log_probs: ``[B, T]`` log-probabilities under the policy that sampled the tokens.
        advantage: ``[B, 1]`` (or ``[B]``) one advantage per response.
        mask: ``[B, T]`` bool, True on response tokens.
        clip_epsilon: the ratio clipping range.
        aggregation: ``"token"`` (mean over all response tokens of the batch) or
            ``"sequence"`` (mean per response, then over responses).

    Returns:
        ``(loss, clip_fraction)``, two scalars.
    """
    advantage = advantage.reshape(-1, 1)
    ratio = (log_probs - old_log_probs).exp()
    unclipped = ratio * advantage
    clipped = ratio.clamp(1.0 - clip_epsilon, 1.0 + clip_epsilon) * advantage
    surrogate = torch.minimum(unclipped, clipped)
    clip_fraction = masked_mean(((ratio - 1.0).abs() > clip_epsilon).float(), mask)
    if aggregation == "token":
        return -masked_mean(surrogate, mask), clip_fraction
    return -masked_mean(surrogate, mask, dim=-1).mean(), clip_fraction


class GRPOLoss(LossModule):
    """Group Relative Policy Optimization loss for a language-model policy.

    Reads a batch written by a generating policy and :class:`MCAdvantage`: ``("tokens",
    "prompt")``, ``("tokens", "response")``, ``("masks", ...)``, the sampling log-probs
    ``("log_probs", "response")`` and ``"advantage"`` (``[B, 1]``). It recomputes the response
    log-probs with ``actor_network`` (a :class:`~rl_llm.modules.TransformersWrapper`; its
    ``log_probs_of`` runs with gradients) and returns:

    - ``loss_objective``: the clipped surrogate (:func:`grpo_objective`);
    - ``loss_kl_to_ref`` (if ``kl_to_ref_coeff``): ``coeff * mean(exp(d) - d - 1)``,
      ``d = ref - new`` (the k3 estimator of KL(new || ref)), reading ``"ref_log_probs"``
      (``[B, T]``, e.g. written by :class:`~rl_llm.envs.KLRewardTransform`);
    - ``loss_entropy`` (if ``entropy_coeff``): ``-coeff * mean entropy``;
    - diagnostics: ``clip_fraction``, ``kl_approx`` (mean of old - new), ``entropy``.

    Args:
        actor_network: the policy, with a ``log_probs_of(full, attention_mask, *, last=...)``
            method (:class:`~rl_llm.modules.TransformersWrapper`).
        clip_epsilon: the ratio clipping range.
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

    def __init__(
        self,
        actor_network: Any,
        *,
        clip_epsilon: float = 0.2,
        kl_to_ref_coeff: float | None = None,
        entropy_coeff: float = 0.0,
        aggregation: str = "token",
    ) -> None:
        super().__init__()
        if aggregation not in ("token", "sequence"):
            raise ValueError(
                f"GRPOLoss: expected aggregation 'token' or 'sequence', got {aggregation!r}."
            )
        if clip_epsilon <= 0:
            raise ValueError(f"GRPOLoss: expected clip_epsilon > 0, got {clip_epsilon}.")
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
                f"GRPOLoss: expected the entry {key!r} ({name}) in the batch. Collect with a "
                f"generating policy and apply MCAdvantage first, or rename it with set_keys."
            )
        return value

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
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
        loss, clip_fraction = grpo_objective(
            lp, old, advantage, mask, clip_epsilon=self.clip_epsilon, aggregation=self.aggregation
        )
        out = TensorDict(
            loss_objective=loss,
            clip_fraction=clip_fraction.detach(),
            kl_approx=masked_mean(old - lp, mask).detach(),
        )
        if self.kl_to_ref_coeff:
            ref = self._get(tensordict, "ref_log_probs")
            diff = ref - lp
            kl = masked_mean(diff.exp() - diff - 1.0, mask)
            out.set("loss_kl_to_ref", self.kl_to_ref_coeff * kl)
            out.set("kl_to_ref", kl.detach())
        if entropy is not None:
            mean_entropy = masked_mean(entropy, mask)
            out.set("loss_entropy", -self.entropy_coeff * mean_entropy)
            out.set("entropy", mean_entropy.detach())
        return out
