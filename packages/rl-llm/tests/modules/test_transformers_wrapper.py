import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.modules import TransformersWrapper
from rl_llm.modules._log_probs import response_mask

PROMPTS = [
    [{"role": "user", "content": "What is 3+4?"}],
    [{"role": "user", "content": "hello world, reply with a number please"}],
    [{"role": "user", "content": "ok"}],
]


def _prompt_td():
    return TensorDict(history={"prompt": History.from_chats(PROMPTS)}, batch_size=[3])


def test_generate_writes_tokens_masks_log_probs_and_history(tiny_model, tiny_tokenizer):
    torch.manual_seed(0)
    policy = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 8, "do_sample": True}
    )
    out = policy(_prompt_td())
    tokens, masks, lp = out["tokens"], out["masks"], out["log_probs"]
    lp_len = tokens.prompt.shape[1]
    assert tokens.response.shape == (3, 8)
    assert torch.equal(tokens.full, torch.cat([tokens.prompt, tokens.response], -1))
    # Masks exclude prompt tokens (and left padding): the assistant mask is the response mask.
    assert not masks.all_assistant_mask[:, :lp_len].any()
    assert torch.equal(masks.all_attention_mask[:, :lp_len], tokens.prompt != policy.pad_token_id)
    resp = masks.all_assistant_mask[:, lp_len:]
    assert torch.equal(resp, response_mask(tokens.response, policy.eos_token_id))
    assert (lp.response[resp] < 0).all()
    assert (lp.response[~resp] == 0).all()
    # The history holds the prompt plus one assistant message with the decoded response.
    full = out["history"].full
    assert full.batch_size == (3, 2)
    assert list(full[:, 1].role) == ["assistant"] * 3
    text = out["text"]
    assert text[0].full == text[0].prompt + text[0].response
    assert text[0].prompt.endswith("<|im_start|>assistant\n")


def test_generate_false_log_probs_equal_generate_true(tiny_model, tiny_tokenizer):
    torch.manual_seed(1)
    gen = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 10, "do_sample": True}
    )
    out = gen(_prompt_td())
    score = TransformersWrapper(tiny_model, tiny_tokenizer, generate=False)
    scored = score(out.select("tokens", "masks").clone())
    torch.testing.assert_close(
        scored["log_probs"].response, out["log_probs"].response, atol=1e-5, rtol=1e-5
    )
    assert scored["log_probs"].response.requires_grad


def test_score_from_history_matches_score_from_tokens(tiny_model, tiny_tokenizer):
    reply = "<answer>7</answer>"
    prompt = History.from_chats(PROMPTS[:1])
    full = prompt.append(History.from_chats([[{"role": "assistant", "content": reply}]]))
    score = TransformersWrapper(tiny_model, tiny_tokenizer, generate=False)
    by_history = score(TensorDict(history={"full": full}, batch_size=[1]))
    assistant = by_history["masks"].all_assistant_mask
    prompt_text = prompt.apply_chat_template(tiny_tokenizer)[0]
    p = tiny_tokenizer(prompt_text, return_tensors="pt")["input_ids"]
    r = tiny_tokenizer(reply + "<|im_end|>", return_tensors="pt")["input_ids"]
    by_tokens = score(TensorDict(tokens={"prompt": p, "response": r}, batch_size=[1]))
    torch.testing.assert_close(
        by_history["log_probs"].full[assistant], by_tokens["log_probs"].response[0]
    )


def test_text_and_tokens_modes(tiny_model, tiny_tokenizer):
    torch.manual_seed(2)
    kwargs = {"max_new_tokens": 5, "do_sample": False}
    text_policy = TransformersWrapper(
        tiny_model, tiny_tokenizer, input_mode="text", generate_kwargs=kwargs
    )
    out = text_policy(TensorDict(text={"prompt": ["What is", "hello world ok"]}, batch_size=[2]))
    tok_policy = TransformersWrapper(tiny_model, None, input_mode="tokens", generate_kwargs=kwargs)
    again = tok_policy(TensorDict(tokens={"prompt": out["tokens"].prompt}, batch_size=[2]))
    # Greedy decoding from the same prompt tokens gives the same response in both modes.
    assert torch.equal(again["tokens"].response, out["tokens"].response)
    torch.testing.assert_close(again["log_probs"].response, out["log_probs"].response)
    score = TransformersWrapper(tiny_model, tiny_tokenizer, input_mode="text", generate=False)
    scored = score(TensorDict(text={"prompt": ["What is"], "response": [" 7"]}, batch_size=[1]))
    assert scored["log_probs"].full.shape == scored["tokens"].full.shape


def test_bad_input_is_reported(tiny_model, tiny_tokenizer):
    with pytest.raises(ValueError, match="expected input_mode in"):
        TransformersWrapper(tiny_model, tiny_tokenizer, input_mode="audio")
    with pytest.raises(ValueError, match="needs a tokenizer"):
        TransformersWrapper(tiny_model, None, input_mode="text")
    policy = TransformersWrapper(tiny_model, tiny_tokenizer)
    with pytest.raises(KeyError, match=r"expected the entry .*history.*prompt"):
        policy(TensorDict(text={"prompt": ["x"]}, batch_size=[1]))


def test_last_positions_fast_path_equals_the_full_computation(tiny_model, tiny_tokenizer):
    torch.manual_seed(3)
    gen = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 7, "do_sample": True}
    )
    out = gen(_prompt_td())
    full, attn = out["tokens"].full, out["masks"].all_attention_mask
    with torch.no_grad():
        lp, ent = gen.log_probs_of(full, attn, return_entropy=True)
        lp7, ent7 = gen.log_probs_of(full, attn, return_entropy=True, last=7)
        lp_all = gen.log_probs_of(full, attn, last=full.shape[1])
    assert lp7.shape == (3, 7)
    torch.testing.assert_close(lp7, lp[:, -7:])
    torch.testing.assert_close(ent7, ent[:, -7:])
    torch.testing.assert_close(lp_all, lp)
