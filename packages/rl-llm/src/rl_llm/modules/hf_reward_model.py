"""HFRewardModelWrapper: a Hugging Face reward model as a TensorDict module writing "reward"."""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import nn

from rl_llm.keys import MASKS, TOKENS


def _scores(output: Any, batch_shape: torch.Size) -> torch.Tensor:
    """One float score per sequence from a model output (``logits``/``rewards``/a tensor)."""
    if isinstance(output, torch.Tensor):
        scores = output
    elif isinstance(getattr(output, "logits", None), torch.Tensor):
        scores = output.logits
    elif isinstance(getattr(output, "rewards", None), torch.Tensor):
        scores = output.rewards
    else:
        raise TypeError(
            f"HFRewardModelWrapper: expected the model to return a tensor or an output with a "
            f"'logits' or 'rewards' tensor, got {type(output).__name__}. Wrap the model so "
            f"it returns one score per sequence."
        )
    if scores.shape == (*batch_shape, 1):
        scores = scores.squeeze(-1)
    if scores.shape != batch_shape:
        raise ValueError(
            f"HFRewardModelWrapper: expected one score per sequence, shape "
            f"{tuple(batch_shape)} or {(*batch_shape, 1)}, got {tuple(scores.shape)}. A "
            f"sequence-classification model needs num_labels=1."
        )
    return scores.float()


class HFRewardModelWrapper(TensorDictModuleBase):
    """A Hugging Face reward model (``AutoModelForSequenceClassification`` with one label, a
    model trained by ``trl.RewardTrainer``) as a TensorDict module.

    ``forward`` reads the token ids at ``token_key`` (``[*B, L]``) and the attention mask at
    ``attention_mask_key``, calls ``model(input_ids=..., attention_mask=...)``, takes one score
    per sequence from the output (its ``logits`` or ``rewards``, ``[*B, 1]`` or ``[*B]``, or a
    bare tensor) and writes it, as float ``[*B]``, at ``reward_key``.

    Args:
        model: the reward model.
        token_key: where the token ids are read (the layout a policy writes:
            ``("tokens", "full")``).
        attention_mask_key: where the mask is read (``("masks", "all_attention_mask")``);
            ``None`` calls the model without one.
        reward_key: where the score is written.
        inference_mode: score under ``torch.no_grad()`` (no gradients); the default keeps
            gradients, for training the model or a critic through it.

    Raises:
        TypeError: ``model`` is not an ``nn.Module``.
        KeyError: (on call) the token ids or the mask are missing, naming the key.
        ValueError: (on call) the model gives more than one score per sequence.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from transformers import Qwen2Config, Qwen2ForSequenceClassification
        >>> from rl_llm.modules import HFRewardModelWrapper
        >>> model = Qwen2ForSequenceClassification(Qwen2Config(vocab_size=32, hidden_size=16,
        ...     intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        ...     num_key_value_heads=2, num_labels=1, pad_token_id=0))
        >>> td = TensorDict(tokens={"full": torch.tensor([[0, 5, 6], [7, 8, 9]])},
        ...     masks={"all_attention_mask": torch.tensor([[0, 1, 1], [1, 1, 1]])}, batch_size=[2])
        >>> HFRewardModelWrapper(model, inference_mode=True)(td)["reward"].shape
        torch.Size([2])
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        token_key: NestedKey = (TOKENS, "full"),
        attention_mask_key: NestedKey | None = (MASKS, "all_attention_mask"),
        reward_key: NestedKey = "reward",
        inference_mode: bool = False,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(
                f"HFRewardModelWrapper: expected model to be a torch.nn.Module (a Hugging Face "
                f"reward model), got {type(model).__name__}."
            )
        super().__init__()
        self.model = model
        self.token_key = token_key
        self.attention_mask_key = attention_mask_key
        self.reward_key = reward_key
        self.inference_mode = bool(inference_mode)
        self.in_keys = [token_key] + ([attention_mask_key] if attention_mask_key else [])
        self.out_keys = [reward_key]

    def _read(self, tensordict: TensorDictBase, key: NestedKey, what: str) -> torch.Tensor:
        value = tensordict.get(key, None)
        if not isinstance(value, torch.Tensor):
            raise KeyError(
                f"HFRewardModelWrapper: expected the {what} at {key!r}, "
                f"{'found none' if value is None else f'got {type(value).__name__}'}. Run the "
                f"policy first (it writes tokens and masks) or pass {what.split()[0]}_key=."
            )
        return value

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        input_ids = self._read(tensordict, self.token_key, "token ids")
        kwargs = {"input_ids": input_ids.long()}
        if self.attention_mask_key is not None:
            mask = self._read(tensordict, self.attention_mask_key, "attention_mask")
            kwargs["attention_mask"] = mask.long()
        context = torch.no_grad() if self.inference_mode else contextlib.nullcontext()
        with context:
            output = self.model(**kwargs)
        tensordict.set(self.reward_key, _scores(output, input_ids.shape[:-1]))
        return tensordict
