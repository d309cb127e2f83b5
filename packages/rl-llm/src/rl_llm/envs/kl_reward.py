"""KLRewardTransform: penalises the reward by the policy's divergence from a reference model."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey
from rl_llm.keys import LOG_PROBS, MASKS, REF_LOG_PROBS, TOKENS


class KLRewardTransform(Transform):
    """``reward -= coeff * sum_t (log pi(y_t) - log pi_ref(y_t))`` over each response.

    Reads what a generating policy wrote (``("tokens", ...)``, ``("masks", ...)`` and the
    sampling log-probs ``("log_probs", "response")``), scores the same tokens with the reference
    model (``ref_model.log_probs_of``, no gradients), writes the reference log-probs at
    ``"ref_log_probs"`` (``[B, T]``, for ``GRPOLoss(kl_to_ref_coeff=...)``) and the per-dialog
    ``"kl_penalty"`` (``[B, 1]``) beside the reward. The sum is a one-sample estimate of
    ``KL(pi || pi_ref)`` for the sampled response. In an env it acts at each step; on a
    collected batch (``transform(batch)``) it updates ``("next", "reward")``.

    Args:
        ref_model: a :class:`~rl_llm.modules.TransformersWrapper` (or anything with
            ``log_probs_of(full, attention_mask)``) around the frozen reference model.
        coeff: the penalty weight.
        reward_key: the reward entry of the step output.

    Examples:
        >>> import copy, torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import KLRewardTransform
        >>> from rl_llm.modules import TransformersWrapper
        >>> from rl_llm.testing import build_tiny_chat_model
        >>> model, tokenizer = build_tiny_chat_model()
        >>> ref = TransformersWrapper(copy.deepcopy(model), tokenizer, generate=False)
        >>> policy = TransformersWrapper(model, tokenizer, generate_kwargs={"max_new_tokens": 4})
        >>> prompt = History.from_chats([[{"role": "user", "content": "hi"}]] * 2)
        >>> batch = policy(TensorDict(history={"prompt": prompt}, batch_size=[2]))
        >>> batch["next"] = TensorDict(reward=torch.ones(2, 1), batch_size=[2])
        >>> KLRewardTransform(ref, coeff=0.1)(batch)["next", "reward"].squeeze(-1).tolist()
        [1.0, 1.0]
    """

    def __init__(self, ref_model: Any, *, coeff: float = 0.1, reward_key: NestedKey = "reward"):
        super().__init__()
        if not hasattr(ref_model, "log_probs_of"):
            raise TypeError(
                f"KLRewardTransform: expected a reference policy with log_probs_of(full, "
                f"attention_mask) (a TransformersWrapper), got {type(ref_model).__name__}."
            )
        self.ref_model = ref_model
        self.coeff = coeff
        self.reward_key = reward_key

    @torch.no_grad()
    def kl_penalty(self, tensordict: TensorDictBase) -> torch.Tensor:
        """``[B, 1]`` summed log-ratio of the sampled responses; writes ``"ref_log_probs"``."""
        response = tensordict.get((TOKENS, "response"), None)
        if response is None:
            raise KeyError(
                "KLRewardTransform: expected ('tokens', 'response') and ('log_probs', "
                "'response') written by a generating policy (return_log_probs=True)."
            )
        full = torch.cat([tensordict.get((TOKENS, "prompt")), response], -1)
        attn = tensordict.get((MASKS, "all_attention_mask"))
        width = response.shape[-1]
        mask = attn[:, -width:]
        ref = self.ref_model.log_probs_of(full, attn, last=width).masked_fill(~mask, 0.0)
        tensordict.set(REF_LOG_PROBS, ref)
        log_ratio = (tensordict.get((LOG_PROBS, "response")) - ref).masked_fill(~mask, 0.0)
        return log_ratio.sum(-1, keepdim=True)

    def _apply(self, tensordict: TensorDictBase, target: TensorDictBase) -> None:
        kl = self.kl_penalty(tensordict)
        reward = target.get(self.reward_key)
        target.set(self.reward_key, reward - self.coeff * kl.to(reward.dtype))
        target.set("kl_penalty", kl)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        self._apply(tensordict, next_tensordict)
        return next_tensordict

    def _reset(self, tensordict, tensordict_reset):
        return tensordict_reset

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        self._apply(tensordict, tensordict.get("next"))
        return tensordict
