import copy

import pytest
import torch
from tensordict import TensorDict

from rl_llm.collectors import TransformersWeightUpdater
from rl_llm.data import History
from rl_llm.modules import TransformersWrapper


def _greedy(policy):
    prompt = History.from_chats([[{"role": "user", "content": q}] for q in ["What is 1+2?", "ok"]])
    out = policy(TensorDict(history={"prompt": prompt}, batch_size=[2]))
    return out["tokens"].response.clone(), out["log_probs"].response.clone()


def test_generation_follows_updates_and_restores(tiny_model, tiny_tokenizer):
    policy = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 8, "do_sample": False}
    )
    updater = TransformersWeightUpdater(tiny_model)
    old_weights = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    before, lp_before = _greedy(policy)
    trained = copy.deepcopy(tiny_model)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    updater.update(trained)
    after, _ = _greedy(policy)
    assert not torch.equal(after, before)
    assert torch.equal(tiny_model.lm_head.weight, trained.lm_head.weight)
    updater.update(old_weights)
    again, lp_again = _greedy(policy)
    assert torch.equal(again, before)
    torch.testing.assert_close(lp_again, lp_before)


def test_mismatches_are_reported(tiny_model):
    updater = TransformersWeightUpdater(tiny_model)
    weights = dict(tiny_model.state_dict())
    weights.pop("lm_head.weight")
    with pytest.raises(KeyError, match=r"the weights lack \['lm_head.weight'\]"):
        updater.update(weights)
    weights["lm_head.weight"] = torch.zeros(3, 3)
    with pytest.raises(ValueError, match=r"lm_head.weight has shape \(3, 3\), the model expects"):
        updater.update(weights)
