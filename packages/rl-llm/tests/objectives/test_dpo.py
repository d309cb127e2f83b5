import copy

import pytest
import torch
import torch.nn.functional as F
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import DPOLoss

QUESTIONS = ["What is 3+4?", "hello"]
CHOSEN = ["<answer>7</answer>", "hello world"]
REJECTED = ["<answer>9</answer>", "no"]


def _history(replies):
    return History.from_chats(
        [
            [{"role": "user", "content": q}, {"role": "assistant", "content": r}]
            for q, r in zip(QUESTIONS, replies)
        ]
    )


def _td():
    return TensorDict(chosen=_history(CHOSEN), rejected=_history(REJECTED), batch_size=[2])


def _seq_log_prob(model, tokenizer, question, reply):
    """Sum of log-probs of the reply tokens (plus the end-of-turn marker), by hand."""
    chat = [{"role": "user", "content": question}]
    prefix = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    prompt = tokenizer(prefix)["input_ids"]
    answer = tokenizer(reply + "<|im_end|>")["input_ids"]
    ids = torch.tensor([prompt + answer + tokenizer("\n")["input_ids"]])
    lp = torch.log_softmax(model(input_ids=ids).logits[0, :-1], -1)
    lp = lp.gather(-1, ids[0, 1:, None]).squeeze(-1)
    return lp[len(prompt) - 1 : len(prompt) - 1 + len(answer)].sum()


def test_matches_a_hand_written_reference(tiny_model, tiny_tokenizer):
    ref_model = copy.deepcopy(tiny_model)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in tiny_model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    loss = DPOLoss(
        TransformersWrapper(tiny_model, tiny_tokenizer, generate=False),
        TransformersWrapper(ref_model, tiny_tokenizer, generate=False),
        beta=0.5,
    )(_td())
    terms = []
    for q, c, r in zip(QUESTIONS, CHOSEN, REJECTED):
        m = (
            _seq_log_prob(tiny_model, tiny_tokenizer, q, c)
            - _seq_log_prob(ref_model, tiny_tokenizer, q, c)
        ) - (
            _seq_log_prob(tiny_model, tiny_tokenizer, q, r)
            - _seq_log_prob(ref_model, tiny_tokenizer, q, r)
        )
        terms.append(-F.logsigmoid(0.5 * m))
    torch.testing.assert_close(loss["loss_dpo"], torch.stack(terms).mean(), atol=1e-5, rtol=1e-5)


def test_training_prefers_the_chosen_replies(tiny_model, tiny_tokenizer):
    ref = TransformersWrapper(copy.deepcopy(tiny_model), tiny_tokenizer, generate=False)
    loss_fn = DPOLoss(TransformersWrapper(tiny_model, tiny_tokenizer, generate=False), ref)
    assert all(n.startswith("actor_network.") for n, _ in loss_fn.named_parameters())
    optim = torch.optim.Adam(loss_fn.parameters(), lr=1e-2)
    for _ in range(3):
        out = loss_fn(_td())
        optim.zero_grad()
        out["loss_dpo"].backward()
        optim.step()
    out = loss_fn(_td())
    assert out["accuracy"] == 1.0
    assert out["loss_dpo"] < 0.69


def test_bad_input_is_reported(tiny_model, tiny_tokenizer):
    scorer = TransformersWrapper(tiny_model, tiny_tokenizer, generate=False)
    with pytest.raises(ValueError, match="expected a scoring ref_network"):
        DPOLoss(scorer, TransformersWrapper(tiny_model, tiny_tokenizer))
    with pytest.raises(KeyError, match="expected the rejected histories at 'rejected'"):
        DPOLoss(scorer, scorer)(_td().exclude("rejected"))
