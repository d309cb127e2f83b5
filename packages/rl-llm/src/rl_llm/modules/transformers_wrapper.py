"""TransformersWrapper: a transformers causal LM as a TensorDict policy over text."""

from __future__ import annotations

from typing import Any

import torch

from rl_llm.modules._log_probs import gather_log_probs, position_ids_from_mask
from rl_llm.modules.base import LLMWrapperBase


class TransformersWrapper(LLMWrapperBase):
    """Wraps a ``transformers`` causal LM and its tokenizer as a TensorDict policy.

    With ``generate=True`` it reads the prompt (``("history", "prompt")``, ``("text",
    "prompt")`` or ``("tokens", "prompt")`` depending on ``input_mode``), samples a response,
    and writes ``"tokens"`` (:class:`~rl_llm.data.Tokens`), ``"masks"``
    (:class:`~rl_llm.data.Masks`), ``"text"`` (:class:`~rl_llm.data.Text`), ``"log_probs"``
    (:class:`~rl_llm.data.LogProbs`, when ``return_log_probs``) and, in history mode,
    ``("history", "response")`` and ``("history", "full")``.

    With ``generate=False`` it computes the log-probabilities of given responses: from
    ``("tokens", "prompt")``/``("tokens", "response")`` when present (what a generation step
    wrote), else from ``("history", "full")`` (assistant tokens) or ``("text", "prompt")`` and
    ``("text", "response")``. Gradients flow (this is the path a loss uses).

    The log-probabilities are those of the model's own distribution, ``log_softmax(logits)``:
    sampling options in ``generate_kwargs`` (temperature, top-k) change which tokens are drawn,
    not the reported log-probabilities, so both modes agree on the same tokens.

    Args:
        model: a ``transformers`` causal LM.
        tokenizer: its tokenizer (``padding_side`` is set to ``"left"``).
        input_mode: ``"history"``, ``"text"`` or ``"tokens"``.
        generate: sample responses (True) or score given ones (False).
        return_log_probs: write ``"log_probs"``.
        generate_kwargs: passed to ``model.generate`` (``max_new_tokens``, ``do_sample``, ...).
        chat_template_name: a registered template, for tokenizers without their own.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import History
        >>> from rl_llm.modules import TransformersWrapper
        >>> from rl_llm.testing import build_tiny_chat_model
        >>> model, tokenizer = build_tiny_chat_model()
        >>> policy = TransformersWrapper(model, tokenizer, input_mode="history",
        ...     generate_kwargs={"max_new_tokens": 4, "do_sample": True})
        >>> prompt = History.from_chats([[{"role": "user", "content": "What is 1+2?"}]] * 3)
        >>> td = TensorDict(history={"prompt": prompt}, batch_size=[3])
        >>> out = policy(td)
        >>> out["tokens"].response.shape, out["log_probs"].response.shape
        (torch.Size([3, 4]), torch.Size([3, 4]))
        >>> out["history"].full.batch_size
        torch.Size([3, 2])
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        input_mode: str = "history",
        generate: bool = True,
        return_log_probs: bool = True,
        generate_kwargs: dict[str, Any] | None = None,
        chat_template_name: str | None = None,
    ) -> None:
        config = model.generation_config
        super().__init__(
            tokenizer,
            input_mode=input_mode,
            generate=generate,
            return_log_probs=return_log_probs,
            generate_kwargs=generate_kwargs,
            chat_template_name=chat_template_name,
            pad_token_id=config.pad_token_id,
            eos_token_id=config.eos_token_id,
        )
        self.model = model

    @property
    def device(self) -> torch.device:
        return self.model.device

    def _sample(
        self, prompt: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        out = self.model.generate(
            input_ids=prompt,
            attention_mask=attention_mask.long(),
            output_logits=self.return_log_probs,
            return_dict_in_generate=True,
            pad_token_id=self.pad_token_id,
            **self.generate_kwargs,
        )
        response = out.sequences[:, prompt.shape[1] :]
        if not self.return_log_probs:
            return response, None
        logits = torch.stack(out.logits, dim=1).float()
        return response, gather_log_probs(logits, response)

    def log_probs_of(
        self,
        full: torch.Tensor,
        attention_mask: torch.Tensor,
        *,
        return_entropy: bool = False,
        last: int | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """``[B, L]`` log-probabilities of each token of ``full`` given the ones before it.

        Position 0 has no context and gets 0. Runs with gradients when they are enabled.

        Args:
            full: ``[B, L]`` token ids (left padding allowed).
            attention_mask: ``[B, L]`` bool, True on real tokens.
            return_entropy: also return the ``[B, L]`` entropy of the model's distribution at
                each position (of the distribution the token was drawn from; 0 at position 0).
            last: only the last ``last`` positions (``[B, min(last, L)]``): the LM head and
                the softmax then run on those positions only (the values are the same as the
                matching columns of the full result).
        """
        if last is not None and last >= full.shape[1]:
            last = None  # every position: the full computation
        keep = full.shape[1] if last is None else last + 1
        logits = (
            self.model(
                input_ids=full,
                attention_mask=attention_mask.long(),
                position_ids=position_ids_from_mask(attention_mask),
                use_cache=False,
                logits_to_keep=keep,
            )
            .logits[:, :-1]
            .float()
        )
        lp = gather_log_probs(logits, full[:, full.shape[1] - keep + 1 :])
        if last is None:
            lp = torch.nn.functional.pad(lp, (1, 0))
        if not return_entropy:
            return lp
        log_p = logits.log_softmax(-1)
        entropy = -(log_p.exp() * log_p).sum(-1)
        if last is None:
            entropy = torch.nn.functional.pad(entropy, (1, 0))
        return lp, entropy
