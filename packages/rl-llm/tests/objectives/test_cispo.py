"""CISPO (MiniMax-M1, 2025) against a float64 reference of its objective and gradient."""

import math

import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import CISPOLoss, CISPOLossOutput, GRPOLoss, cispo_objective


def _reference_cispo(lp, old, adv, mask, eps_low, eps_high):
    """Eq. 4 of the paper: value of -sum sg(clip(r)) A log pi / count and its gradient."""
    total, count, grads = 0.0, 0, [[0.0] * len(row) for row in lp]
    for i, row in enumerate(lp):
        for t, x in enumerate(row):
            if mask[i][t]:
                w = min(max(math.exp(x - old[i][t]), 1 - eps_low), 1 + eps_high)
                total += w * adv[i] * x
                grads[i][t] = w * adv[i]
                count += 1
    count = max(count, 1)
    return -total / count, [[-g / count for g in row] for row in grads]


def test_objective_and_gradient_match_the_paper():
    lp = [[-0.3, 0.1, -2.0, 0.4], [-1.0, -0.2, 0.3, -0.5], [0.2, 0.2, 0.2, 0.2]]
    old = [[-0.5, -0.2, -1.0, 0.0], [-0.7, -0.2, 0.0, -0.1], [0.0, 0.0, 0.0, 0.0]]
    adv = [1.5, -0.7, 2.0]
    mask = [[1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 0, 0]]  # the last response is empty
    lp_t = torch.tensor(lp, dtype=torch.float64, requires_grad=True)
    loss, frac = cispo_objective(
        lp_t,
        torch.tensor(old, dtype=torch.float64),
        torch.tensor(adv, dtype=torch.float64),
        torch.tensor(mask, dtype=torch.bool),
        clip_epsilon=(1.0, 0.28),
    )
    expected, grads = _reference_cispo(lp, old, adv, mask, 1.0, 0.28)
    assert loss.item() == pytest.approx(expected, rel=1e-12)
    loss.backward()
    torch.testing.assert_close(lp_t.grad, torch.tensor(grads, dtype=torch.float64))
    # Only the weights above 1.28 are clipped (no lower bound): exp(0.3) twice of 6 tokens.
    assert frac.item() == pytest.approx(2 / 6)


def test_a_clipped_token_keeps_its_gradient():
    # r = e^0.5 > 1.2 with A = 1: GRPO's clipped token has no gradient, CISPO's has -1.2.
    lp = torch.tensor([[0.5]], dtype=torch.float64, requires_grad=True)
    args = (torch.zeros(1, 1, dtype=torch.float64), torch.ones(1, 1), torch.ones(1, 1, dtype=bool))
    loss, _ = cispo_objective(lp, *args, clip_epsilon=0.2)
    (grad,) = torch.autograd.grad(loss, lp)
    assert grad.item() == pytest.approx(-1.2)


def test_cispo_loss_gradient_on_a_tiny_policy(tiny_model, tiny_tokenizer):
    torch.manual_seed(0)
    policy = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 6, "do_sample": True}
    )
    prompts = History.from_chats([[{"role": "user", "content": q}] for q in ["1+2?", "hi"]])
    batch = policy(TensorDict(history={"prompt": prompts}, batch_size=[2]))
    batch["advantage"] = torch.tensor([[1.0], [-2.0]])
    noise = 0.4 * torch.randn(batch["log_probs"].response.shape)
    batch["log_probs"].response = batch["log_probs"].response + noise
    out = CISPOLoss(policy, clip_epsilon=(1.0, 0.1))(batch)
    assert isinstance(out, CISPOLossOutput)
    assert out.clip_fraction > 0
    params = list(tiny_model.parameters())
    grad = torch.autograd.grad(out.loss_objective, params)
    # The same gradient by hand: -sum_t clip(r_t) A log pi_t / count, weights fixed.
    width = batch["tokens"].response.shape[1]
    mask = batch["masks"].all_assistant_mask[:, -width:]
    full = torch.cat([batch["tokens"].prompt, batch["tokens"].response], -1)
    lp = policy.log_probs_of(full, batch["masks"].all_attention_mask, last=width)
    w = (lp.detach() - batch["log_probs"].response).exp().clamp(0.0, 1.1)
    ref = -(w * batch["advantage"] * lp)[mask].sum() / mask.sum()
    ref_grad = torch.autograd.grad(ref, params)
    for a, b in zip(grad, ref_grad):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)
    # And not GRPO's (whose clipped tokens do not move).
    grpo = GRPOLoss(policy, clip_epsilon=(1.0, 0.1))(batch).loss_objective
    grpo_grad = torch.autograd.grad(grpo, params)
    assert any(not torch.allclose(a, b) for a, b in zip(grad, grpo_grad))
