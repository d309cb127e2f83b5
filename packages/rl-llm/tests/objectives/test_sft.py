import copy
import math

import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.envs import RetrieveLogProb
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import SFTLoss, minor_sft_loss, sft_loss

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


def test_sft_and_minor_sft_functions_by_hand():
    lp = torch.tensor([-1.0, -2.5, 0.0], dtype=torch.float64, requires_grad=True)
    ref = torch.tensor([-2.0, -2.5, -4.0], dtype=torch.float64)
    assert sft_loss(lp).item() == pytest.approx(3.5 / 3, rel=1e-15)
    assert sft_loss(lp, "sum").item() == 3.5
    assert sft_loss(lp, "none").tolist() == [1.0, 2.5, -0.0]
    beta = 0.5
    # -log sigmoid(x) = log(1 + e^-x) with x = beta * (lp - ref) = 0.5, 0, 2.
    per = [math.log1p(math.exp(-x)) for x in (0.5, 0.0, 2.0)]
    loss = minor_sft_loss(lp, ref, beta, "none")
    assert loss.tolist() == pytest.approx(per, rel=1e-14)
    assert minor_sft_loss(lp, ref, beta, "sum").item() == pytest.approx(sum(per), rel=1e-14)
    minor_sft_loss(lp, ref, beta).backward()
    # d/dlp = -beta * sigmoid(-x) / 3 for the mean.
    grads = [-beta / (1 + math.exp(x)) / 3 for x in (0.5, 0.0, 2.0)]
    assert lp.grad.tolist() == pytest.approx(grads, rel=1e-13)
    with pytest.raises(ValueError, match=r"one shape, got \(3,\) and \(2,\)"):
        minor_sft_loss(lp, ref[:2], beta, "mean")
    with pytest.raises(ValueError, match=r"sft_loss: expected reduction in .* got 'avg'"):
        sft_loss(lp, "avg")


def test_minor_sft_mode_against_a_shifted_reference(tiny_model, tiny_tokenizer):
    actor = TransformersWrapper(tiny_model, tiny_tokenizer, generate=False)
    td = _td()
    ref = RetrieveLogProb(
        TransformersWrapper(copy.deepcopy(tiny_model), tiny_tokenizer, generate=False),
        log_probs_full_key=("ref_log_probs", "full"),
    )(td.clone())
    # The reference is the same model: log-ratio 0 on every dialog, loss log 2.
    loss = SFTLoss(actor, loss_function="minor_sft", beta=0.5)(ref)
    assert loss.loss_sft.item() == pytest.approx(math.log(2), abs=1e-5)
    # A reference 2 nats more likely per token: x = 0.5 * -2 = -1, loss log(1 + e).
    ref["ref_log_probs", "full"] = ref["ref_log_probs", "full"] + 2.0
    out = SFTLoss(actor, loss_function="minor_sft", beta=0.5, reduction="none")(ref)
    assert out.loss_sft.tolist() == pytest.approx([math.log1p(math.e)] * 2, abs=1e-5)
    out.loss_sft.sum().backward()
    assert any(p.grad is not None for p in tiny_model.parameters())
    with pytest.raises(KeyError, match=r"expected the reference log-probs at \('ref_log_probs'"):
        SFTLoss(actor, loss_function="minor_sft")(td)
    with pytest.raises(ValueError, match="expected loss_function in"):
        SFTLoss(actor, loss_function="dpo")
