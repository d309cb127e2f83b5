"""TransformersWrapper: a transformers causal LM as a TensorDict policy over text."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_llm._utils import as_strings
from rl_llm.data import ChatHistory, History, LogProbs, Masks, Text, Tokens
from rl_llm.keys import HISTORY, LOG_PROBS, MASKS, TEXT, TOKENS
from rl_llm.modules._log_probs import (
    gather_log_probs,
    position_ids_from_mask,
    response_mask,
)

_INPUT_MODES = ("history", "text", "tokens")


class TransformersWrapper(nn.Module):
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
        super().__init__()
        if input_mode not in _INPUT_MODES:
            raise ValueError(
                f"TransformersWrapper: expected input_mode in {_INPUT_MODES}, got {input_mode!r}."
            )
        if tokenizer is None and input_mode != "tokens":
            raise ValueError(
                f"TransformersWrapper: input_mode={input_mode!r} needs a tokenizer, got None."
            )
        self.model = model
        self.tokenizer = tokenizer
        if tokenizer is not None:
            tokenizer.padding_side = "left"
        self.input_mode = input_mode
        self.generate = generate
        self.return_log_probs = return_log_probs
        self.generate_kwargs = dict(generate_kwargs or {})
        self.generate_kwargs.setdefault("max_new_tokens", 32)
        self.chat_template_name = chat_template_name
        config = model.generation_config
        self.pad_token_id = tokenizer.pad_token_id if tokenizer is not None else config.pad_token_id
        self.eos_token_id = config.eos_token_id

    # ------------------------------------------------------------------ prompt handling
    def _prompt_ids(self, td: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """Left-padded prompt ids, their attention mask, and the prompt history (or None)."""
        if self.input_mode == "tokens":
            ids = self._require(td, (TOKENS, "prompt"))
            return ids, ids != self.pad_token_id, None
        if self.input_mode == "history":
            history = self._require(td, (HISTORY, "prompt"))
            texts = history.apply_chat_template(
                self.tokenizer,
                add_generation_prompt=True,
                chat_template_name=self.chat_template_name,
            )
        else:
            history = None
            texts = as_strings(self._require(td, (TEXT, "prompt")))
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        device = self.model.device
        return enc["input_ids"].to(device), enc["attention_mask"].to(device).bool(), history

    def _require(self, td: TensorDictBase, key: tuple[str, str]) -> Any:
        value = td.get(key, None)
        if value is None:
            raise KeyError(
                f"TransformersWrapper(input_mode={self.input_mode!r}, generate={self.generate}): "
                f"expected the entry {key} in the input TensorDict; it holds "
                f"{sorted(map(str, td.keys(True)))}."
            )
        return value

    # ------------------------------------------------------------------ forward
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Generates (or scores) and writes the outputs into ``tensordict``; returns it."""
        if self.generate:
            return self._generate(tensordict)
        return self._score(tensordict)

    @torch.no_grad()
    def _generate(self, td: TensorDictBase) -> TensorDictBase:
        prompt, attn, history = self._prompt_ids(td)
        out = self.model.generate(
            input_ids=prompt,
            attention_mask=attn.long(),
            output_logits=self.return_log_probs,
            return_dict_in_generate=True,
            pad_token_id=self.pad_token_id,
            **self.generate_kwargs,
        )
        response = out.sequences[:, prompt.shape[1] :]
        resp_mask = response_mask(response, self.eos_token_id)
        response = response.masked_fill(~resp_mask, self.pad_token_id)
        full = torch.cat([prompt, response], dim=-1)
        batch = td.batch_size
        td.set(TOKENS, Tokens(prompt=prompt, response=response, full=full, batch_size=batch))
        td.set(
            MASKS,
            Masks(
                all_attention_mask=torch.cat([attn, resp_mask], -1),
                all_assistant_mask=torch.cat([torch.zeros_like(attn), resp_mask], -1),
                batch_size=batch,
            ),
        )
        if self.return_log_probs:
            logits = torch.stack(out.logits, dim=1).float()
            lp = gather_log_probs(logits, response).masked_fill(~resp_mask, 0.0)
            td.set(LOG_PROBS, LogProbs(response=lp, batch_size=batch))
        if self.tokenizer is not None:
            self._write_text(td, prompt, attn, response, resp_mask, history)
        return td

    def _write_text(self, td, prompt, attn, response, resp_mask, history) -> None:
        decode = self.tokenizer.batch_decode
        prompt_text = decode([p[m].tolist() for p, m in zip(prompt, attn)])
        # The response text keeps special tokens (the end-of-turn marker) so that
        # prompt + response is the rendered dialog; History contents drop them.
        resp_ids = [r[m].tolist() for r, m in zip(response, resp_mask)]
        resp_text = decode(resp_ids)
        batch = td.batch_size
        td.set(
            TEXT,
            Text(
                prompt=prompt_text,
                response=resp_text,
                full=[p + r for p, r in zip(prompt_text, resp_text)],
                batch_size=batch,
            ),
        )
        if history is not None:
            contents = decode(resp_ids, skip_special_tokens=True)
            reply = History.from_chats([[{"role": "assistant", "content": c}] for c in contents])
            td.set(
                HISTORY,
                ChatHistory(
                    prompt=history, response=reply, full=history.append(reply), batch_size=batch
                ),
            )

    def _score(self, td: TensorDictBase) -> TensorDictBase:
        batch = td.batch_size
        prompt = td.get((TOKENS, "prompt"), None)
        response = td.get((TOKENS, "response"), None)
        if prompt is not None and response is not None:
            full = torch.cat([prompt, response], -1)
            attn = td.get((MASKS, "all_attention_mask"), None)
            if attn is None:
                attn = full != self.pad_token_id
            assistant = td.get((MASKS, "all_assistant_mask"), None)
            if assistant is None:
                assistant = torch.zeros_like(attn)
                assistant[:, prompt.shape[1] :] = attn[:, prompt.shape[1] :]
        else:
            full, attn, assistant = self._tokenize_full(td)
        lp_full = self.log_probs_of(full, attn)
        lp_full = lp_full.masked_fill(~attn, 0.0)
        lp = LogProbs(full=lp_full, batch_size=batch)
        if response is not None:
            lp.response = lp_full[:, full.shape[1] - response.shape[1] :]
        td.set(LOG_PROBS, lp)
        if prompt is None or response is None:
            td.set(TOKENS, Tokens(full=full, batch_size=batch))
        td.set(
            MASKS, Masks(all_attention_mask=attn, all_assistant_mask=assistant, batch_size=batch)
        )
        return td

    def log_probs_of(
        self,
        full: torch.Tensor,
        attention_mask: torch.Tensor,
        *,
        return_entropy: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """``[B, L]`` log-probabilities of each token of ``full`` given the ones before it.

        Position 0 has no context and gets 0. Runs with gradients when they are enabled.

        Args:
            full: ``[B, L]`` token ids (left padding allowed).
            attention_mask: ``[B, L]`` bool, True on real tokens.
            return_entropy: also return the ``[B, L]`` entropy of the model's distribution at
                each position (of the distribution the token was drawn from; 0 at position 0).
        """
        logits = (
            self.model(
                input_ids=full,
                attention_mask=attention_mask.long(),
                position_ids=position_ids_from_mask(attention_mask),
                use_cache=False,
            )
            .logits[:, :-1]
            .float()
        )
        lp = torch.nn.functional.pad(gather_log_probs(logits, full[:, 1:]), (1, 0))
        if not return_entropy:
            return lp
        log_p = logits.log_softmax(-1)
        entropy = -(log_p.exp() * log_p).sum(-1)
        return lp, torch.nn.functional.pad(entropy, (1, 0))

    def _tokenize_full(self, td: TensorDictBase) -> tuple[torch.Tensor, ...]:
        device = self.model.device
        if self.input_mode == "history":
            history = self._require(td, (HISTORY, "full"))
            enc = history.apply_chat_template(
                self.tokenizer,
                add_generation_prompt=False,
                chat_template_name=self.chat_template_name,
                tokenize=True,
                return_assistant_tokens_mask=True,
            )
            ids, masks = enc["input_ids"], enc["assistant_masks"]
            width = max(len(x) for x in ids)
            full = torch.full((len(ids), width), self.pad_token_id, dtype=torch.long)
            attn = torch.zeros(len(ids), width, dtype=torch.bool)
            assistant = torch.zeros(len(ids), width, dtype=torch.bool)
            for i, (row, mask) in enumerate(zip(ids, masks)):
                full[i, width - len(row) :] = torch.as_tensor(row)
                attn[i, width - len(row) :] = True
                assistant[i, width - len(row) :] = torch.as_tensor(mask, dtype=torch.bool)
            return full.to(device), attn.to(device), assistant.to(device)
        if self.input_mode == "text":
            prompts = as_strings(self._require(td, (TEXT, "prompt")))
            responses = as_strings(self._require(td, (TEXT, "response")))
            tok = self.tokenizer
            p = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
            tok.padding_side = "right"
            try:
                r = tok(responses, return_tensors="pt", padding=True, add_special_tokens=False)
            finally:
                tok.padding_side = "left"
            full = torch.cat([p["input_ids"], r["input_ids"]], -1).to(device)
            attn = torch.cat([p["attention_mask"], r["attention_mask"]], -1).bool().to(device)
            assistant = torch.cat(
                [torch.zeros_like(p["attention_mask"]), r["attention_mask"]], -1
            ).bool()
            return full, attn, assistant.to(device)
        raise KeyError(
            "TransformersWrapper(input_mode='tokens', generate=False): expected ('tokens', "
            "'prompt') and ('tokens', 'response') in the input TensorDict."
        )
