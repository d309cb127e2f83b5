"""DPOLoss: Direct Preference Optimization on pairs of chosen and rejected dialogs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase

from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_llm.keys import HISTORY, LOG_PROBS, MASKS


def dpo_objective(
    chosen: torch.Tensor,
    rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    *,
    beta: float,
) -> torch.Tensor:
    """``-mean(logsigmoid(beta * ((c - ref_c) - (r - ref_r))))`` over ``[B]`` sequence log-probs."""
    margin = (chosen - ref_chosen) - (rejected - ref_rejected)
    return -F.logsigmoid(beta * margin).mean()


class DPOLoss(LossModule):
    """DPO: prefers the chosen dialog over the rejected one, relative to a frozen reference.

    Reads two full histories per row (``"chosen"`` and ``"rejected"``, each a
    :class:`~rl_llm.data.History` of batch ``(B, n)`` ending with the assistant reply) and
    scores the assistant tokens of each with ``actor_network`` (a scoring
    :class:`~rl_llm.modules.TransformersWrapper`, ``generate=False``, history mode) and, without
    gradients, with ``ref_network``. The sequence log-probability is the sum over assistant
    tokens.

    Args:
        actor_network: the scoring policy being trained.
        ref_network: the scoring reference policy (frozen).
        beta: the inverse temperature of the preference model.

    Returns (from ``forward``): ``loss_dpo``, and the detached diagnostics ``reward_margin``
    (mean ``beta * margin``) and ``accuracy`` (fraction of rows with a positive margin).

    Examples:
        >>> import copy
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import History
        >>> from rl_llm.modules import TransformersWrapper
        >>> from rl_llm.objectives import DPOLoss
        >>> from rl_llm.testing import build_tiny_chat_model
        >>> model, tokenizer = build_tiny_chat_model()
        >>> actor = TransformersWrapper(model, tokenizer, generate=False)
        >>> ref = TransformersWrapper(copy.deepcopy(model), tokenizer, generate=False)
        >>> def dialog(reply):
        ...     return History.from_chats([[{"role": "user", "content": "2+2?"},
        ...         {"role": "assistant", "content": reply}]])
        >>> td = TensorDict(chosen=dialog("4"), rejected=dialog("5"), batch_size=[1])
        >>> round(DPOLoss(actor, ref, beta=0.1)(td)["loss_dpo"].item(), 4)  # log(2) at the start
        0.6931
    """

    @dataclass
    class _AcceptedKeys:
        chosen: NestedKey = "chosen"
        rejected: NestedKey = "rejected"

    def __init__(self, actor_network: Any, ref_network: Any, *, beta: float = 0.1) -> None:
        super().__init__()
        for name, net in (("actor_network", actor_network), ("ref_network", ref_network)):
            if getattr(net, "generate", False):
                raise ValueError(
                    f"DPOLoss: expected a scoring {name} (TransformersWrapper(..., "
                    f"generate=False)), got one that generates."
                )
        self.actor_network = actor_network
        self.__dict__["ref_network"] = ref_network  # not a submodule: never trained
        self.beta = beta

    @staticmethod
    def _sequence_log_prob(net: Any, history: Any, batch: torch.Size) -> torch.Tensor:
        scored = net(TensorDict({HISTORY: {"full": history}}, batch_size=batch))
        mask = scored.get((MASKS, "all_assistant_mask"))
        return (scored.get((LOG_PROBS, "full")) * mask).sum(-1)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        pair = []
        for name in ("chosen", "rejected"):
            key = getattr(self.tensor_keys, name)
            history = tensordict.get(key, None)
            if history is None:
                raise KeyError(f"DPOLoss: expected the {name} histories at {key!r}.")
            pair.append(history)
        batch = tensordict.batch_size
        chosen, rejected = (self._sequence_log_prob(self.actor_network, h, batch) for h in pair)
        with torch.no_grad():
            ref_c, ref_r = (self._sequence_log_prob(self.ref_network, h, batch) for h in pair)
        loss = dpo_objective(chosen, rejected, ref_c, ref_r, beta=self.beta)
        margin = self.beta * ((chosen - ref_c) - (rejected - ref_r)).detach()
        return TensorDict(
            loss_dpo=loss, reward_margin=margin.mean(), accuracy=(margin > 0).float().mean()
        )
