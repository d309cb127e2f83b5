import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import GRPOLoss


def _batch(model, tokenizer, seed=0):
    torch.manual_seed(seed)
    policy = TransformersWrapper(
        model, tokenizer, generate_kwargs={"max_new_tokens": 6, "do_sample": True}
    )
    prompts = History.from_chats(
        [[{"role": "user", "content": q}] for q in ["What is 1+2?", "hi", "hello world ok"]]
    )
    batch = policy(TensorDict(history={"prompt": prompts}, batch_size=[3]))
    batch["advantage"] = torch.tensor([[1.0], [-0.5], [2.0]])
    # Pretend the sampling policy was a little different (so ratios leave 1 and clip).
    noise = torch.randn(batch["log_probs"].response.shape) * 0.3
    batch["log_probs"].response = batch["log_probs"].response + noise
    batch["ref_log_probs"] = batch["log_probs"].response - 0.2 * noise
    return policy, batch


def _reference(model, batch, eps, kl_coeff, ent_coeff):
    """The same loss written sample by sample, on unpadded sequences."""
    tokens, masks = batch["tokens"], batch["masks"]
    width = tokens.response.shape[1]
    terms, kls, ents, count = [], [], [], 0
    for i in range(tokens.full.shape[0]):
        real = masks.all_attention_mask[i]
        ids = tokens.full[i][real].unsqueeze(0)
        assistant = masks.all_assistant_mask[i][real]
        logits = model(input_ids=ids).logits[0, :-1]
        logp_all = torch.log_softmax(logits, -1)
        lp = logp_all.gather(-1, ids[0, 1:, None]).squeeze(-1)
        ent = -(logp_all.exp() * logp_all).sum(-1)
        keep = assistant[1:]
        resp_mask = masks.all_assistant_mask[i, -width:]
        old = batch["log_probs"].response[i][resp_mask]
        ref = batch["ref_log_probs"][i][resp_mask]
        new = lp[keep]
        a = batch["advantage"][i, 0]
        ratio = torch.exp(new - old)
        surr = torch.minimum(ratio * a, torch.clamp(ratio, 1 - eps, 1 + eps) * a)
        terms.append(surr.sum())
        d = ref - new
        kls.append((torch.exp(d) - d - 1).sum())
        ents.append(ent[keep].sum())
        count += int(keep.sum())
    loss = -sum(terms) / count
    return loss + kl_coeff * sum(kls) / count - ent_coeff * sum(ents) / count


def test_grpo_matches_hand_written_reference(tiny_model, tiny_tokenizer):
    policy, batch = _batch(tiny_model, tiny_tokenizer)
    loss_fn = GRPOLoss(policy, clip_epsilon=0.1, kl_to_ref_coeff=0.05, entropy_coeff=0.01)
    out = loss_fn(batch)
    total = out["loss_objective"] + out["loss_kl_to_ref"] + out["loss_entropy"]
    expected = _reference(tiny_model, batch, 0.1, 0.05, 0.01)
    torch.testing.assert_close(total, expected, atol=1e-5, rtol=1e-5)
    assert 0 < out["clip_fraction"] < 1
    # The gradients agree too.
    grad = torch.autograd.grad(total, list(tiny_model.parameters()))
    ref_grad = torch.autograd.grad(expected, list(tiny_model.parameters()))
    for a, b in zip(grad, ref_grad):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_sequence_aggregation_and_only_objective(tiny_model, tiny_tokenizer):
    policy, batch = _batch(tiny_model, tiny_tokenizer, seed=1)
    out = GRPOLoss(policy, aggregation="sequence")(batch)
    assert set(out.keys()) == {"loss_objective", "clip_fraction", "kl_approx", "ESS"}


def test_bad_input_is_reported(tiny_model, tiny_tokenizer):
    policy, batch = _batch(tiny_model, tiny_tokenizer)
    with pytest.raises(ValueError, match="expected aggregation 'token' or 'sequence'"):
        GRPOLoss(policy, aggregation="mean")
    with pytest.raises(ValueError, match="expected clip_epsilon > 0"):
        GRPOLoss(policy, clip_epsilon=0)
    with pytest.raises(KeyError, match="expected the entry 'advantage'"):
        GRPOLoss(policy)(batch.exclude("advantage"))
    renamed = batch.rename_key_("advantage", "adv")
    out = GRPOLoss(policy).set_keys(advantage="adv")(renamed)
    assert out["loss_objective"].requires_grad
