"""Tiny offline chat models for tests, examples and benchmarks (no hub download).

:func:`build_tiny_chat_model` trains a byte-level BPE tokenizer with the ``tokenizers`` library on
generated arithmetic dialogs, gives it a chat template, and builds a randomly initialised
Qwen2 or Llama model from a config. It needs the ``transformers`` extra.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path
from typing import Any

from rl_llm.data._templates import get_chat_template

_SPECIAL = {
    "qwen2": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    "llama": [
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
    ],
}


def _corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = [
        "What",
        "is",
        "the",
        "answer",
        "sum",
        "of",
        "and",
        "think",
        "step",
        "result",
        "You",
        "are",
        "a",
        "helpful",
        "assistant",
        "Reply",
        "with",
        "number",
        "print",
        "python",
        "code",
        "hello",
        "world",
        "ok",
        "yes",
        "no",
        "tool",
        "call",
    ]
    lines = []
    for _ in range(n):
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        lines.append(f"What is {a}+{b}? <answer>{a + b}</answer>")
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 10))))
        lines.append(f"print({a} * {b})\nx = [{a}, {b}]")
    return lines


@functools.cache
def _trained_bpe(family: str, vocab_size: int, seed: int) -> str:
    """The trained BPE as JSON (training is deterministic; cached per process)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=_SPECIAL[family],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(300, seed), trainer=trainer)
    return tok.to_str()


def build_tiny_tokenizer(*, family: str = "qwen2", vocab_size: int = 384, seed: int = 0) -> Any:
    """A byte-level BPE tokenizer trained on generated text, with its family's chat template.

    Args:
        family: ``"qwen2"`` (ChatML template) or ``"llama"`` (Llama 3 template).
        vocab_size: the BPE vocabulary size (special tokens included).
        seed: seeds the generated training text.

    Returns:
        A ``transformers.PreTrainedTokenizerFast`` with ``chat_template``, eos and pad tokens.

    Raises:
        ValueError: an unknown family.
    """
    if family not in _SPECIAL:
        raise ValueError(
            f"build_tiny_tokenizer: expected family 'qwen2' or 'llama', got {family!r}."
        )
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer.from_str(_trained_bpe(family, vocab_size, seed))
    if family == "qwen2":
        eos, pad, template = "<|im_end|>", "<|endoftext|>", "chatml_format"
    else:
        eos, pad, template = "<|eot_id|>", "<|end_of_text|>", "llama3"
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, pad_token=pad)
    fast.padding_side = "left"
    fast.chat_template = get_chat_template(template).template
    return fast


def build_tiny_chat_model(
    folder: str | Path | None = None,
    *,
    family: str = "qwen2",
    hidden_size: int = 64,
    num_layers: int = 2,
    seed: int = 0,
) -> tuple[Any, Any]:
    """A randomly initialised tiny causal LM and its locally trained tokenizer.

    Args:
        folder: if given, both are saved there with ``save_pretrained`` (loadable by
            ``from_pretrained`` and by vLLM).
        family: ``"qwen2"`` or ``"llama"``.
        hidden_size: the model width (two attention heads of ``hidden_size // 2``).
        num_layers: the number of decoder layers.
        seed: seeds the weights and the tokenizer's training text.

    Returns:
        ``(model, tokenizer)``, the model in eval mode, float32, on CPU.

    Examples:
        >>> from rl_llm.testing import build_tiny_chat_model
        >>> model, tokenizer = build_tiny_chat_model()
        >>> model.config.num_hidden_layers, len(tokenizer) <= 384
        (2, True)
    """
    import torch

    tokenizer = build_tiny_tokenizer(family=family, seed=seed)
    common = dict(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    if family == "qwen2":
        from transformers import Qwen2Config, Qwen2ForCausalLM

        model = Qwen2ForCausalLM(Qwen2Config(**common))
    else:
        from transformers import LlamaConfig, LlamaForCausalLM

        model = LlamaForCausalLM(LlamaConfig(**common))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.eval()
    if folder is not None:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return model, tokenizer


__all__ = ["build_tiny_chat_model", "build_tiny_tokenizer"]
