import pytest
import torch

from rl_llm.data import PromptData, PromptTensorDictTokenizer, TensorDictTokenizer


def test_texts_become_right_padded_ids(tiny_tokenizer):
    texts = ["hello world", "ok", "What is 12 + 30? It is 42."]
    out = TensorDictTokenizer(tiny_tokenizer, 12)({"text": texts})
    assert out.batch_size == (3,)
    pad = tiny_tokenizer.pad_token_id
    for i, text in enumerate(texts):
        ids = tiny_tokenizer(text, add_special_tokens=False)["input_ids"][:12]
        n = len(ids)
        assert out["input_ids"][i, :n].tolist() == ids
        assert (out["input_ids"][i, n:] == pad).all()
        assert out["attention_mask"][i].tolist() == [1] * n + [0] * (12 - n)
    longest = TensorDictTokenizer(tiny_tokenizer, 64, padding="longest")({"text": texts[:2]})
    assert longest["input_ids"].shape[1] == len(
        tiny_tokenizer("hello world", add_special_tokens=False)["input_ids"]
    )
    raw = TensorDictTokenizer(tiny_tokenizer, 4, return_tensordict=False)({"text": "one text"})
    assert isinstance(raw, dict)
    assert len(raw["input_ids"]) == 1


def test_prompt_tokenizer_marks_the_prompt_end_and_overlong_rows(tiny_tokenizer):
    sample = {"prompt": ["Sum: 1+2", "Say hi"], "label": [" is 3", " hi " * 40]}
    out = PromptTensorDictTokenizer(tiny_tokenizer, 24)(sample)
    rindex = out["prompt_rindex"][0].item()
    assert tiny_tokenizer.decode(out["input_ids"][0, : rindex + 1]) == "Sum: 1+2"
    assert out["valid_sample"].tolist() == [True, False]
    data = PromptData.from_texts(sample["prompt"], sample["label"], tiny_tokenizer, max_length=24)
    assert torch.equal(data.labels, data.input_ids)
    prompts = data.mask_label(pad_token_id=tiny_tokenizer.pad_token_id)
    assert prompts.attention_mask.sum(-1).tolist() == (data.prompt_rindex + 1).tolist()
    assert tiny_tokenizer.decode(prompts.input_ids[1][prompts.attention_mask[1].bool()]) == "Say hi"


def test_bad_samples_are_reported(tiny_tokenizer):
    with pytest.raises(
        ValueError, match="expected max_length >= 1 and padding 'max_length' or 'longest'"
    ):
        TensorDictTokenizer(tiny_tokenizer, 8, padding="left")
    with pytest.raises(KeyError, match="expected the texts at 'text' in the sample"):
        TensorDictTokenizer(tiny_tokenizer, 8)({"prompt": ["x"]})
    with pytest.raises(ValueError, match="expected strings at 'text', got int at index 1"):
        TensorDictTokenizer(tiny_tokenizer, 8)({"text": ["x", 3]})
    with pytest.raises(
        ValueError, match="expected one label per prompt, got 1 labels for 2 prompts"
    ):
        PromptTensorDictTokenizer(tiny_tokenizer, 8)({"prompt": ["a", "b"], "label": ["c"]})
