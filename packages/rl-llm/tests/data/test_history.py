import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import History, set_chat_template
from rl_llm.data._templates import get_chat_template

CHATS = [
    [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "user", "content": "What is 3+4?"},
        {"role": "assistant", "content": "<answer>7</answer>"},
    ],
    [
        {"role": "system", "content": "Reply with a number"},
        {"role": "user", "content": "hello world"},
        {"role": "assistant", "content": "ok 12"},
    ],
]


def test_from_chats_is_batched_and_nested():
    history = History.from_chats(CHATS)
    assert history.batch_size == torch.Size([2, 3])
    assert history[1, 2].content == "ok 12"
    assert list(history[0].role) == ["system", "user", "assistant"]
    td = TensorDict(history=history, batch_size=[2])
    stacked = torch.stack([td, td])
    assert stacked["history"].batch_size == torch.Size([2, 2, 3])
    assert stacked["history"][1, 0, 1].content == "What is 3+4?"


def test_from_chats_rejects_bad_input():
    with pytest.raises(ValueError, match="dialogs of one length"):
        History.from_chats([CHATS[0], CHATS[1][:2]])
    with pytest.raises(ValueError, match=r"message \[0\]\[0\] has role 'robot'"):
        History.from_chats([[{"role": "robot", "content": "x"}]])
    with pytest.raises(ValueError, match="must be a dict with 'role' and 'content'"):
        History.from_chats([[{"role": "user"}]])


@pytest.mark.parametrize("content", [5, 2.5, None])
def test_from_chats_refuses_content_that_is_not_a_string(content):
    with pytest.raises(ValueError, match=r"message \[0\]\[1\] has content .* expected a str"):
        History.from_chats(
            [[{"role": "user", "content": "q"}, {"role": "user", "content": content}]]
        )
    with pytest.raises(ValueError, match=r"message \[0\]\[0\] has content"):
        History.from_chats([{"role": "assistant", "content": content}])


def test_append_adds_messages():
    history = History.from_chats([c[:2] for c in CHATS])
    reply = History.from_chats([c[2:] for c in CHATS])
    full = history.append(reply)
    assert full.to_chats() == CHATS
    with pytest.raises(ValueError, match="expected a history with batch"):
        history.append(History.from_chats(CHATS[0]))


@pytest.mark.parametrize("name", ["chatml_format", "llama3"])
def test_template_round_trip_without_tokenizer(name):
    history = History.from_chats(CHATS)
    texts = history.apply_chat_template(chat_template_name=name, add_generation_prompt=False)
    assert "What is 3+4?" in texts[0]
    back = History.from_text(texts)  # the family is detected from the text
    assert back.to_chats() == CHATS


def test_template_round_trip_with_tokenizer(tiny_tokenizer):
    history = History.from_chats([c[:2] for c in CHATS])
    texts = history.apply_chat_template(tiny_tokenizer, add_generation_prompt=True)
    assert texts[0].endswith("<|im_start|>assistant\n")
    back = History.from_text(texts, tokenizer=tiny_tokenizer)
    assert back.to_chats() == [c[:2] for c in CHATS]


def test_assistant_mask_covers_assistant_tokens_only(tiny_tokenizer):
    enc = History.from_chats(CHATS).apply_chat_template(
        tiny_tokenizer,
        add_generation_prompt=False,
        tokenize=True,
        return_assistant_tokens_mask=True,
    )
    ids, mask = enc["input_ids"][0], enc["assistant_masks"][0]
    assistant = tiny_tokenizer.decode([t for t, m in zip(ids, mask) if m])
    assert assistant == "<answer>7</answer><|im_end|>"


def test_tokenizer_without_template_gets_one(tiny_tokenizer):
    import copy

    bare = copy.deepcopy(tiny_tokenizer)
    bare.chat_template = None
    history = History.from_chats(CHATS)
    with pytest.raises(ValueError, match="the tokenizer has no chat_template"):
        history.apply_chat_template(bare)
    set_chat_template(bare, "llama3")
    assert bare.chat_template == get_chat_template("llama3").template
    text = history.apply_chat_template(bare, add_generation_prompt=False)[0]
    assert text.startswith("<|begin_of_text|><|start_header_id|>system")


def test_from_text_needs_a_known_family():
    with pytest.raises(ValueError, match="could not detect the chat template family"):
        History.from_text("plain text, no markers")
    with pytest.raises(ValueError, match="chat template 'nope' is not registered"):
        History.from_text("x", chat_template_name="nope")
