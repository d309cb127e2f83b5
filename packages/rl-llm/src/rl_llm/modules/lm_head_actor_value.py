"""LMHeadActorValueOperator: a causal LM split into a shared trunk, a token policy and a value head."""

from __future__ import annotations

from typing import Any

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from rl_core.modules import ActorValueOperator, ProbabilisticActor, ValueOperator
from rl_llm.modules._log_probs import position_ids_from_mask


class _Trunk(nn.Module):
    """The transformer of a causal LM: ids and mask -> ``[B, L, H]`` hidden states."""

    def __init__(self, transformer: nn.Module) -> None:
        super().__init__()
        self.transformer = transformer

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask.bool()
        out = self.transformer(
            input_ids=input_ids,
            attention_mask=mask.long(),
            position_ids=position_ids_from_mask(mask),
        )
        return out.last_hidden_state


class LMHeadActorValueOperator(ActorValueOperator):
    """An actor-critic over a causal LM (RLHF's PPO): one transformer, two heads.

    The trunk is ``base_model.transformer`` (``input_ids``, ``attention_mask`` -> ``"x"``);
    the policy is ``base_model.lm_head`` (``"x"`` -> ``"logits"``) followed by a categorical
    over the vocabulary at every position (``"action"``, and its log-probability); the value
    head is a new ``Linear(hidden, 1, bias=False)`` (``"x"`` -> ``"state_value"``, ``[B, L, 1]``).
    :meth:`get_policy_operator` and :meth:`get_value_operator` share the trunk.

    Args:
        base_model: a causal LM with ``transformer`` and ``lm_head`` attributes (GPT-2's
            ``GPT2LMHeadModel``).

    Raises:
        TypeError: ``base_model`` lacks ``transformer`` or ``lm_head``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from transformers import GPT2Config, GPT2LMHeadModel
        >>> from rl_llm.modules import LMHeadActorValueOperator
        >>> lm = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40))
        >>> op = LMHeadActorValueOperator(lm)
        >>> td = op(TensorDict(input_ids=torch.tensor([[1, 2, 3]]),
        ...     attention_mask=torch.ones(1, 3, dtype=torch.bool), batch_size=[1]))
        >>> td["logits"].shape, td["action"].shape, td["state_value"].shape
        (torch.Size([1, 3, 40]), torch.Size([1, 3]), torch.Size([1, 3, 1]))
    """

    def __init__(self, base_model: Any) -> None:
        transformer = getattr(base_model, "transformer", None)
        lm_head = getattr(base_model, "lm_head", None)
        if not isinstance(transformer, nn.Module) or not isinstance(lm_head, nn.Linear):
            raise TypeError(
                f"LMHeadActorValueOperator: expected a causal LM with a `transformer` module "
                f"and a linear `lm_head` (e.g. GPT2LMHeadModel), got {type(base_model).__name__}."
            )
        common = TensorDictModule(
            _Trunk(transformer), in_keys=["input_ids", "attention_mask"], out_keys=["x"]
        )
        policy = ProbabilisticActor(
            TensorDictModule(lm_head, in_keys=["x"], out_keys=["logits"]),
            in_keys=["logits"],
            out_keys=["action"],
            distribution_class=torch.distributions.Categorical,
            return_log_prob=True,
        )
        value = ValueOperator(
            nn.Linear(lm_head.in_features, 1, bias=False), in_keys=["x"], out_keys=["state_value"]
        )
        super().__init__(common, policy, value)
