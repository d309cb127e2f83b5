"""LLMWrapperBase: the TensorDict contract shared by the transformers and vLLM policies."""

from __future__ import annotations

import abc
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_llm._utils import as_strings
from rl_llm.data import ChatHistory, History, LogProbs, Masks, Text, Tokens
from rl_llm.keys import HISTORY, LOG_PROBS, MASKS, TEXT, TOKENS
from rl_llm.modules._log_probs import response_mask

INPUT_MODES = ("history", "text", "tokens")


class LLMWrapperBase(nn.Module, abc.ABC):
    """A language model as a TensorDict policy: reads prompts, writes tokens, masks, log-probs.

    Subclasses implement two methods; everything else (prompt rendering and tokenisation, the
    output layout, scoring given responses) lives here:

    - ``_sample(prompt, attention_mask) -> (response, log_probs)``: ``[B, Lr]`` generated ids
      (anything after the end of sequence is ignored) and their ``[B, Lr]`` log-probabilities
      under the model's own distribution, or ``None`` without ``return_log_probs``.
    - ``log_probs_of(full, attention_mask, *, return_entropy, last) -> [B, L]``: the
      log-probability of each token given the ones before it (0 at position 0); with ``last``,
      the last ``last`` columns only.

    See :class:`~rl_llm.modules.TransformersWrapper` for the keys read and written.
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        input_mode: str,
        generate: bool,
        return_log_probs: bool,
        generate_kwargs: dict[str, Any] | None,
        chat_template_name: str | None,
        pad_token_id: int | None,
        eos_token_id: int | list[int] | None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if input_mode not in INPUT_MODES:
            raise ValueError(f"{name}: expected input_mode in {INPUT_MODES}, got {input_mode!r}.")
        if tokenizer is None and input_mode != "tokens":
            raise ValueError(f"{name}: input_mode={input_mode!r} needs a tokenizer, got None.")
        self.tokenizer = tokenizer
        if tokenizer is not None:
            tokenizer.padding_side = "left"
        self.input_mode = input_mode
        self.generate = generate
        self.return_log_probs = return_log_probs
        self.generate_kwargs = dict(generate_kwargs or {})
        self.generate_kwargs.setdefault("max_new_tokens", 32)
        self.chat_template_name = chat_template_name
        self.pad_token_id = tokenizer.pad_token_id if tokenizer is not None else pad_token_id
        self.eos_token_id = eos_token_id

    @property
    def device(self) -> torch.device:
        """Where prompt tensors are placed."""
        return torch.device("cpu")

    @abc.abstractmethod
    def _sample(
        self, prompt: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Generates ``[B, Lr]`` ids and their log-probabilities from left-padded prompts."""

    @abc.abstractmethod
    def log_probs_of(
        self,
        full: torch.Tensor,
        attention_mask: torch.Tensor,
        *,
        return_entropy: bool = False,
        last: int | None = None,
    ) -> Any:
        """``[B, L]`` log-probabilities of each token of ``full`` given the ones before it.

        With ``last``, only the last ``last`` columns (``[B, last]``).
        """

    # ------------------------------------------------------------------ prompt handling
    def _prompt_ids(self, td: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor, Any, Any]:
        """Left-padded prompt ids, their mask, the prompt history and texts (or None)."""
        if self.input_mode == "tokens":
            ids = self._require(td, (TOKENS, "prompt"))
            return ids, ids != self.pad_token_id, None, None
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
        enc = self.tokenizer(
            texts,
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=False,
        )
        device = self.device
        return enc["input_ids"].to(device), enc["attention_mask"].to(device).bool(), history, texts

    def _require(self, td: TensorDictBase, key: tuple[str, str]) -> Any:
        value = td.get(key, None)
        if value is None:
            raise KeyError(
                f"{type(self).__name__}(input_mode={self.input_mode!r}, generate={self.generate}): "
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
        prompt, attn, history, texts = self._prompt_ids(td)
        response, lp = self._sample(prompt, attn)
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
        if lp is not None:
            td.set(LOG_PROBS, LogProbs(response=lp.masked_fill(~resp_mask, 0.0), batch_size=batch))
        if self.tokenizer is not None:
            self._write_text(td, prompt, attn, response, resp_mask, history, texts)
        return td

    def _write_text(self, td, prompt, attn, response, resp_mask, history, texts) -> None:
        decode = self.tokenizer.batch_decode
        # The prompt text is the rendered input when there is one (no decode round trip).
        prompt_text = texts or decode([p[m].tolist() for p, m in zip(prompt, attn)])
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

    def _tokenize_full(self, td: TensorDictBase) -> tuple[torch.Tensor, ...]:
        device = self.device
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
            kw = {"return_tensors": "pt", "padding": True, "add_special_tokens": False}
            p = tok(prompts, padding_side="left", **kw)
            r = tok(responses, padding_side="right", **kw)
            full = torch.cat([p["input_ids"], r["input_ids"]], -1).to(device)
            attn = torch.cat([p["attention_mask"], r["attention_mask"]], -1).bool().to(device)
            assistant = torch.cat(
                [torch.zeros_like(p["attention_mask"]), r["attention_mask"]], -1
            ).bool()
            return full, attn, assistant.to(device)
        raise KeyError(
            f"{type(self).__name__}(input_mode='tokens', generate=False): expected ('tokens', "
            "'prompt') and ('tokens', 'response') in the input TensorDict."
        )
