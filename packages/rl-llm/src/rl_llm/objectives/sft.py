"""SFTLoss: supervised fine-tuning on the assistant tokens of chat histories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tensordict import TensorDict, TensorDictBase

from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_llm.keys import HISTORY, LOG_PROBS, MASKS
from rl_llm.modules._log_probs import masked_mean
from rl_llm.objectives.loss_outputs import SFTLossOutput


class SFTLoss(LossModule):
    """Negative log-likelihood of the assistant messages of ``("history", "full")``.

    The actor (a :class:`~rl_llm.modules.TransformersWrapper` with ``generate=False`` and
    ``input_mode="history"``) renders each dialog with its chat template and scores it; only
    tokens inside assistant turns (the template's ``{% generation %}`` blocks, end-of-turn
    marker included) count: system, user and tool tokens are masked out. The output is an
    :class:`SFTLossOutput`.

    Args:
        actor_network: the scoring policy.
        assistant_only: mask everything but assistant tokens (True) or train on every token.

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

    def __init__(self, actor_network: Any, *, assistant_only: bool = True) -> None:
        super().__init__()
        if getattr(actor_network, "generate", False):
            raise ValueError(
                "SFTLoss: expected a scoring actor (TransformersWrapper(..., generate=False)), "
                "got one that generates."
            )
        self.actor_network = actor_network
        self.assistant_only = assistant_only

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
        return SFTLossOutput(loss_sft=-masked_mean(lp, mask), num_tokens=mask.sum().detach())
