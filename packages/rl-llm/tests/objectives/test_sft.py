import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import SFTLoss

CHATS = [
    [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "user", "content": "What is 3+4?"},
        {"role": "assistant", "content": "<answer>7</answer>"},
    ],
    [
        {"role": "system", "content": "ok"},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hello world, the sum is 12"},
    ],
]


def _td():
    return TensorDict(history={"full": History.from_chats(CHATS)}, batch_size=[2])


def test_loss_is_the_nll_of_assistant_tokens_only(tiny_model, tiny_tokenizer):
    loss = SFTLoss(TransformersWrapper(tiny_model, tiny_tokenizer, generate=False))(_td())
    # By hand: each dialog alone, the assistant tokens found by decoding the content.
    total, count = 0.0, 0
    for chat in CHATS:
        prefix = tiny_tokenizer.apply_chat_template(
            chat[:2], add_generation_prompt=True, tokenize=False
        )
        ids = tiny_tokenizer.apply_chat_template(chat, tokenize=True)["input_ids"]
        answer = tiny_tokenizer(chat[2]["content"] + "<|im_end|>")["input_ids"]
        start = len(tiny_tokenizer(prefix)["input_ids"])
        assert ids[start : start + len(answer)] == answer
        logits = tiny_model(input_ids=torch.tensor([ids])).logits[0]
        lp = torch.log_softmax(logits[:-1], -1).gather(-1, torch.tensor(ids[1:])[:, None])
        total = total + lp[start - 1 : start - 1 + len(answer)].sum()
        count += len(answer)
    torch.testing.assert_close(loss["loss_sft"], -total / count)
    assert int(loss["num_tokens"]) == count


def test_training_lowers_the_loss(tiny_model, tiny_tokenizer):
    loss_fn = SFTLoss(TransformersWrapper(tiny_model, tiny_tokenizer, generate=False))
    opt = torch.optim.Adam(loss_fn.parameters(), lr=1e-2)
    first = None
    for _ in range(6):
        value = loss_fn(_td())["loss_sft"]
        first = value.item() if first is None else first
        opt.zero_grad()
        value.backward()
        opt.step()
    assert value.item() < first - 0.5


def test_all_tokens_mode_counts_more_tokens(tiny_model, tiny_tokenizer):
    actor = TransformersWrapper(tiny_model, tiny_tokenizer, generate=False)
    only = SFTLoss(actor)(_td())["num_tokens"]
    every = SFTLoss(actor, assistant_only=False)(_td())["num_tokens"]
    assert every > only


def test_bad_input_is_reported(tiny_model, tiny_tokenizer):
    with pytest.raises(ValueError, match="expected a scoring actor"):
        SFTLoss(TransformersWrapper(tiny_model, tiny_tokenizer))
    loss = SFTLoss(TransformersWrapper(tiny_model, tiny_tokenizer, generate=False))
    with pytest.raises(KeyError, match="expected the chat histories"):
        loss(TensorDict(batch_size=[2]))
