import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import (
    AddThinkingPrompt,
    ChatEnv,
    GSM8KEnv,
    LLMEnv,
    TemplateTransform,
    Tokenizer,
)
from rl_llm.modules import TransformersWrapper


def test_template_transform_lets_a_text_policy_drive_a_chat_env(tiny_model, tiny_tokenizer):
    env = TransformedEnv(ChatEnv(batch_size=(2,)), TemplateTransform(tiny_tokenizer))
    td = env.reset(TensorDict(query=["hi", "what is 1+1"], batch_size=[2]))
    expected = tiny_tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert td["text"].prompt[0] == expected
    policy = TransformersWrapper(
        tiny_model, tiny_tokenizer, input_mode="text", generate_kwargs={"max_new_tokens": 4}
    )
    out = env.step(policy(td))
    history = out["next", "history"].prompt
    assert history.batch_size == (2, 2)
    assert [str(r) for r in history[:, -1].role] == ["assistant", "assistant"]
    replies = tiny_tokenizer.batch_decode(out["tokens"].response, skip_special_tokens=True)
    assert [str(c) for c in history[:, -1].content] == [r.strip() for r in replies]
    # The next prompt text is rendered from the grown history.
    assert out["next", "text"].prompt[0].startswith(expected)


def test_template_transform_needs_text_or_history():
    env = TransformedEnv(
        ChatEnv(batch_size=(1,)), TemplateTransform(chat_template_name="chatml_format")
    )
    td = env.reset(TensorDict(query=["x"], batch_size=[1]))
    del td["text"]
    with pytest.raises(KeyError, match="expected \\('history', 'full'\\) or the policy's text"):
        env.step(td)


def test_tokenizer_forward_and_inverse_in_a_text_env(tiny_tokenizer):
    env = TransformedEnv(
        LLMEnv(batch_size=(2,)),
        Tokenizer(
            ["query"], ["tokens_query"], ["tokens_response"], ["response"], tokenizer=tiny_tokenizer
        ),
    )
    td = env.reset(TensorDict(query=["hello world", "ok"], batch_size=[2]))
    ids, mask = td["tokens_query"], td["tokens_query_attention_mask"]
    assert not mask[1, 0]
    assert mask[1, -1]
    assert tiny_tokenizer.batch_decode([i[m] for i, m in zip(ids, mask)]) == ["hello world", "ok"]
    answer = tiny_tokenizer(["!", " yes"], add_special_tokens=False)["input_ids"]
    width = max(map(len, answer))
    pad = tiny_tokenizer.pad_token_id
    td["tokens_response"] = torch.tensor([a + [pad] * (width - len(a)) for a in answer])
    out = env.step(td)
    assert list(out["next", "query"]) == ["hello world!", "ok yes"]
    with pytest.raises(ValueError, match="expected a tokenizer"):
        Tokenizer()


def _reply(td, replies):
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    return td


def test_thinking_prompt_edits_only_the_wrong_replies():
    data = [{"question": "1+1?", "answer": "2"}]
    env = TransformedEnv(
        GSM8KEnv(data, batch_size=(2,), repeats=2),
        AddThinkingPrompt(cond=lambda td: td["reward"] < 1, prompt="Wait."),
    )
    out = env.step(_reply(env.reset(), ["<answer>2</answer>", "maybe 3"]))["next"]
    contents = [str(c) for c in out["history"].prompt[:, -1].content]
    assert contents == ["<answer>2</answer>", "maybe 3 Wait."]
    assert out["reward"].squeeze(-1).tolist() == [1.0, 0.0]
    assert out["done"].squeeze(-1).tolist() == [True, False]


def test_thinking_prompt_as_a_user_message():
    env = TransformedEnv(
        GSM8KEnv([{"question": "1+1?", "answer": "2"}], batch_size=(2,), repeats=2),
        AddThinkingPrompt(cond=lambda td: True, role="user", random_prompt=True),
    )
    out = env.step(_reply(env.reset(), ["a", "b"]))["next"]
    assert out["history"].prompt.batch_size == (2, 4)
    assert [str(r) for r in out["history"].prompt[:, -1].role] == ["user", "user"]
    assert out["reward"].sum() == 0
    assert not out["done"].any()
    env_mixed = TransformedEnv(
        GSM8KEnv([{"question": "1+1?", "answer": "2"}], batch_size=(2,), repeats=2),
        AddThinkingPrompt(cond=lambda td: td["reward"] < 1, role="user"),
    )
    with pytest.raises(ValueError, match="cond held for some dialogs only"):
        env_mixed.step(_reply(env_mixed.reset(), ["<answer>2</answer>", "b"]))
    with pytest.raises(ValueError, match="expected role"):
        AddThinkingPrompt(cond=bool, role="system")
