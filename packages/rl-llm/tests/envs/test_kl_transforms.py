import copy

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import AdaptiveKLController, History
from rl_llm.envs import ChatEnv, KLComputation, RetrieveKL, RetrieveLogProb
from rl_llm.modules import TransformersWrapper


def _reference_log_probs(model, full, attn):
    # Definition: log p(x_t | x_<t) from the model's logits, float64, 0 where not scored.
    pos = (attn.long().cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = model(input_ids=full, attention_mask=attn.long(), position_ids=pos).logits
    lp = torch.log_softmax(logits.double(), -1)[:, :-1].gather(-1, full[:, 1:, None])[..., 0]
    return torch.cat([torch.zeros(full.shape[0], 1, dtype=torch.float64), lp], -1)


@pytest.fixture
def two_models(tiny_model, tiny_tokenizer):
    ref_model = copy.deepcopy(tiny_model)
    with torch.no_grad():
        for p in tiny_model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return tiny_model, ref_model


def _generated(model, tokenizer):
    torch.manual_seed(0)
    policy = TransformersWrapper(
        model, tokenizer, generate_kwargs={"max_new_tokens": 5, "do_sample": True}
    )
    prompt = History.from_chats([[{"role": "user", "content": q}] for q in ("hi", "what is 2+2")])
    return policy(TensorDict(history={"prompt": prompt}, batch_size=[2]))


def test_retrieve_log_prob_matches_the_definition(two_models, tiny_tokenizer):
    gen_model, _ = two_models
    td = _generated(gen_model, tiny_tokenizer)
    scorer = TransformersWrapper(gen_model, tiny_tokenizer, generate=False)
    lp = RetrieveLogProb(scorer, log_probs_full_key=("mine", "full"))(td)["mine", "full"]
    full, attn = td["tokens"].full, td["masks"].all_attention_mask
    assistant = td["masks"].all_assistant_mask
    ref = _reference_log_probs(gen_model, full, attn).masked_fill(~assistant, 0.0)
    torch.testing.assert_close(lp.double(), ref, atol=1e-4, rtol=1e-4)
    assert (lp[~assistant] == 0).all()
    # The response part equals the sampling log-probs written at generation.
    width = td["tokens"].response.shape[1]
    torch.testing.assert_close(lp[:, -width:], td["log_probs"].response, atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="built with generate=False"):
        RetrieveLogProb(TransformersWrapper(gen_model, tiny_tokenizer))


def test_retrieve_kl_in_a_chat_env_subtracts_the_reference_kl(two_models, tiny_tokenizer):
    gen_model, ref_model = two_models
    gen = TransformersWrapper(gen_model, tiny_tokenizer, generate=False)
    ref = TransformersWrapper(ref_model, tiny_tokenizer, generate=False)
    env = TransformedEnv(ChatEnv(batch_size=(2,)), RetrieveKL(gen, ref, coeff=0.5))
    td = env.reset(TensorDict(query=["hi", "what is 2+2"], batch_size=[2]))
    policy = TransformersWrapper(
        gen_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 5, "do_sample": True}
    )
    torch.manual_seed(1)
    out = env.step(policy(td))
    full, attn = out["tokens"].full, out["masks"].all_attention_mask
    assistant = out["masks"].all_assistant_mask
    log_ratio = _reference_log_probs(gen_model, full, attn) - _reference_log_probs(
        ref_model, full, attn
    )
    expected_kl = log_ratio.masked_fill(~assistant, 0.0).sum(-1, keepdim=True)
    torch.testing.assert_close(
        out["next", "kl_penalty"].double(), expected_kl, atol=1e-4, rtol=1e-4
    )
    torch.testing.assert_close(
        out["next", "reward"].double(), -0.5 * expected_kl, atol=1e-4, rtol=1e-4
    )
    assert expected_kl.abs().sum() > 1e-3  # the models differ: a test that can fail


def test_kl_computation_pads_and_a_controller_sets_its_coefficient():
    td = TensorDict(
        {
            ("log_probs", "full"): torch.tensor([[-1.0, -2.0, -3.0]]),
            ("ref_log_probs", "full"): torch.tensor([[-1.0, -1.0]]),  # narrower, left-padded
            ("next", "reward"): torch.zeros(1, 1),
        },
        batch_size=[1],
    )
    kl = KLComputation(add_to_reward=False)
    # gen - ref with ref left-padded by 0: (-1 - 0) + (-2 + 1) + (-3 + 1) = -4
    assert kl(td.clone())["next", "kl_penalty"].item() == pytest.approx(-4.0)
    AdaptiveKLController(init_kl_coef=0.25, target=1.0, horizon=10, model=kl)
    assert kl.coeff == 0.25
    with pytest.raises(KeyError, match="expected log-probs at"):
        KLComputation()(TensorDict(batch_size=[1]))
    with pytest.raises(ValueError, match="expected a ref_model"):
        RetrieveKL()


def test_retrieve_kl_from_collector_uses_the_sampling_log_probs(two_models, tiny_tokenizer):
    gen_model, ref_model = two_models
    ref = TransformersWrapper(ref_model, tiny_tokenizer, generate=False)
    env = TransformedEnv(ChatEnv(batch_size=(2,)), RetrieveKL("from_collector", ref, coeff=0.5))
    td = env.reset(TensorDict(query=["hi", "what is 2+2"], batch_size=[2]))
    policy = TransformersWrapper(
        gen_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 5, "do_sample": True}
    )
    torch.manual_seed(1)
    out = env.step(policy(td))
    full, attn = out["tokens"].full, out["masks"].all_attention_mask
    assistant = out["masks"].all_assistant_mask
    log_ratio = _reference_log_probs(gen_model, full, attn) - _reference_log_probs(
        ref_model, full, attn
    )
    expected_kl = log_ratio.masked_fill(~assistant, 0.0).sum(-1, keepdim=True)
    torch.testing.assert_close(
        out["next", "kl_penalty"].double(), expected_kl, atol=1e-4, rtol=1e-4
    )
    assert expected_kl.abs().sum() > 1e-3
    # The generating model was not run again: the full layout is the sampling log-probs.
    width = out["tokens"].response.shape[1]
    torch.testing.assert_close(out["log_probs", "full"][:, -width:], out["log_probs"].response)
    assert (out["log_probs", "full"][:, :-width] == 0).all()


def test_retrieve_kl_from_collector_reports_what_is_missing(tiny_model, tiny_tokenizer):
    ref = TransformersWrapper(tiny_model, tiny_tokenizer, generate=False)
    with pytest.raises(ValueError, match="needs assistant_only=True"):
        RetrieveKL("from_collector", ref, assistant_only=False)
    with pytest.raises(ValueError, match="got the string 'collector'"):
        RetrieveKL("collector", ref)
    transform = RetrieveKL("from_collector", ref)
    td = TensorDict({("next", "reward"): torch.zeros(1, 1)}, batch_size=[1])
    with pytest.raises(KeyError, match=r"log_probs\.response=missing"):
        transform(td)
