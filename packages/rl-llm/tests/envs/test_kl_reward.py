import copy

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import ChatEnv, KLRewardTransform
from rl_llm.modules import TransformersWrapper


def _sample(model, tokenizer, seed):
    torch.manual_seed(seed)
    policy = TransformersWrapper(
        model, tokenizer, generate_kwargs={"max_new_tokens": 8, "do_sample": True}
    )
    prompt = History.from_chats([[{"role": "user", "content": "What is 2+2?"}]] * 16)
    batch = policy(TensorDict(history={"prompt": prompt}, batch_size=[16]))
    batch["next"] = TensorDict(reward=torch.ones(16, 1), batch_size=[16])
    return batch


def test_reward_drops_as_the_policy_drifts(tiny_model, tiny_tokenizer):
    ref = TransformersWrapper(copy.deepcopy(tiny_model), tiny_tokenizer, generate=False)
    kl = KLRewardTransform(ref, coeff=0.5)
    means = []
    for scale in (0.0, 0.05, 0.3):
        drifted = copy.deepcopy(tiny_model)
        torch.manual_seed(0)
        with torch.no_grad():
            for p in drifted.parameters():
                p.add_(torch.randn_like(p) * scale)
        batch = kl(_sample(drifted, tiny_tokenizer, seed=1))
        means.append(batch["next", "reward"].mean().item())
        if scale == 0.0:
            torch.testing.assert_close(batch["next", "kl_penalty"], torch.zeros(16, 1))
            torch.testing.assert_close(batch["ref_log_probs"], batch["log_probs"].response)
    assert means[0] == pytest.approx(1.0)
    assert means[0] > means[1] > means[2]


def test_in_an_env_it_penalises_each_step(tiny_model, tiny_tokenizer):
    ref = TransformersWrapper(copy.deepcopy(tiny_model), tiny_tokenizer, generate=False)
    with torch.no_grad():
        tiny_model.lm_head.weight.mul_(3.0)
    env = TransformedEnv(ChatEnv(batch_size=(4,)), KLRewardTransform(ref, coeff=1.0))
    policy = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 6, "do_sample": True}
    )
    torch.manual_seed(0)
    td = env.step(policy(env.reset(TensorDict(query=["a", "b", "c", "d"], batch_size=[4]))))
    penalty = td["next", "kl_penalty"]
    torch.testing.assert_close(td["next", "reward"], -penalty)
    assert penalty.mean() > 0
    assert td["ref_log_probs"].shape == td["log_probs"].response.shape


def test_bad_input_is_reported():
    with pytest.raises(TypeError, match="expected a reference policy with log_probs_of"):
        KLRewardTransform(object())
    kl = KLRewardTransform(_Dummy())
    with pytest.raises(KeyError, match=r"expected \('tokens', 'response'\)"):
        kl(TensorDict(next=TensorDict(reward=torch.zeros(1, 1), batch_size=[1]), batch_size=[1]))


class _Dummy:
    def log_probs_of(self, full, attention_mask):
        raise AssertionError("not reached")
