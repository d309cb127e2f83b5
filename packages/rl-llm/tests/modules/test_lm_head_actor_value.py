import pytest
import torch
from tensordict import TensorDict

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_llm.modules import LMHeadActorValueOperator

transformers = pytest.importorskip("transformers", reason='pip install "rl-llm[transformers]"')


def _lm():
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=1,
        n_embd=16,
        n_head=2,
        vocab_size=40,
        n_positions=16,
        bos_token_id=0,
        eos_token_id=0,
    )
    return transformers.GPT2LMHeadModel(config).eval()


def _td():
    ids = torch.tensor([[0, 0, 5, 6, 7], [1, 2, 3, 4, 5]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]], dtype=torch.bool)
    return TensorDict(input_ids=ids, attention_mask=mask, batch_size=[2])


def test_heads_match_the_language_model():
    lm = _lm()
    op = LMHeadActorValueOperator(lm)
    td = _td()
    with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
        out = op(td.clone())
        position_ids = (td["attention_mask"].long().cumsum(-1) - 1).clamp(min=0)
        want = lm(
            input_ids=td["input_ids"],
            attention_mask=td["attention_mask"].long(),
            position_ids=position_ids,
        ).logits
    torch.testing.assert_close(out["logits"], want)
    action = out["action"]
    assert action.shape == (2, 5)
    assert ((action >= 0) & (action < 40)).all()
    log_prob = torch.log_softmax(want, -1).gather(-1, action.unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(out["action_log_prob"], log_prob)
    assert out["state_value"].shape == (2, 5, 1)


def test_policy_and_value_share_the_trunk():
    lm = _lm()
    op = LMHeadActorValueOperator(lm)
    policy, value = op.get_policy_operator(), op.get_value_operator()
    with set_exploration_type(ExplorationType.RANDOM):
        logits = policy(_td())["logits"]
    v = value(_td())["state_value"]
    (logits.sum() + v.sum()).backward()
    trunk_grad = lm.transformer.wte.weight.grad
    assert trunk_grad is not None
    assert trunk_grad.abs().sum() > 0
    with pytest.raises(TypeError, match="expected a causal LM with a `transformer` module"):
        LMHeadActorValueOperator(torch.nn.Linear(2, 2))
