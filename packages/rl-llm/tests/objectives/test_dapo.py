"""DAPO (Yu et al. 2025) against float64 references of the paper's formulas."""

import math

import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import (
    DAPO,
    DAPOLossOutput,
    MCAdvantage,
    OverlongRewardShaping,
    grpo_objective,
    overlong_penalty,
)


def _reference_dapo(lp, old, adv, mask, eps_low, eps_high):
    """Eq. 10 of the paper, token by token: value and d(loss)/d(lp) of every token."""
    total, count, grads = 0.0, 0, [[0.0] * len(row) for row in lp]
    for i, row in enumerate(lp):
        for t, x in enumerate(row):
            if not mask[i][t]:
                continue
            r = math.exp(x - old[i][t])
            a = adv[i]
            unclipped, clipped = r * a, min(max(r, 1 - eps_low), 1 + eps_high) * a
            total += min(unclipped, clipped)
            count += 1
            # The gradient flows only where the unclipped term is the minimum.
            grads[i][t] = r * a if unclipped <= clipped else 0.0
    count = max(count, 1)
    return -total / count, [[-g / count for g in row] for row in grads]


def _hand_batch():
    """Masked tokens, a response with no token (row 2), a group-equal reward (advantage 0)."""
    lp = [
        [-0.3, 0.1, -2.0, 0.4],
        [-1.0, -0.2, 0.3, -0.5],
        [0.2, 0.2, 0.2, 0.2],
        [0.5, -0.4, 0.0, 0.9],
    ]
    old = [
        [-0.5, -0.2, -1.0, 0.0],
        [-0.7, -0.2, 0.0, -0.1],
        [0.0, 0.0, 0.0, 0.0],
        [0.2, 0.0, 0.0, 0.6],
    ]
    adv = [1.5, -0.7, 2.0, 0.0]
    mask = [[1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 0, 0], [1, 1, 0, 0]]
    return lp, old, adv, mask


def test_token_level_objective_with_decoupled_clip_matches_the_paper():
    lp, old, adv, mask = _hand_batch()
    lp_t = torch.tensor(lp, dtype=torch.float64, requires_grad=True)
    loss, frac = grpo_objective(
        lp_t,
        torch.tensor(old, dtype=torch.float64),
        torch.tensor(adv, dtype=torch.float64).unsqueeze(-1),
        torch.tensor(mask, dtype=torch.bool),
        clip_epsilon=(0.2, 0.28),
    )
    expected, grads = _reference_dapo(lp, old, adv, mask, 0.2, 0.28)
    assert loss.dtype == torch.float64
    assert loss.item() == pytest.approx(expected, rel=1e-12)
    loss.backward()
    torch.testing.assert_close(lp_t.grad, torch.tensor(grads, dtype=torch.float64))
    # Ratios outside [0.8, 1.28] among the 8 response tokens: exp(0.3) three times, exp(-1.0)
    # and exp(-0.4) twice.
    assert frac.item() == pytest.approx(6 / 8)


def test_clip_higher_lets_a_positive_token_rise_further():
    # r = 1.25 with A = 1: clipped at 1.2 by a symmetric 0.2, kept by (0.2, 0.28).
    lp = torch.tensor([[math.log(1.25)]], dtype=torch.float64)
    old, adv, mask = (
        torch.zeros(1, 1, dtype=torch.float64),
        torch.ones(1, 1),
        torch.ones(1, 1, dtype=bool),
    )
    sym, _ = grpo_objective(lp, old, adv, mask, clip_epsilon=0.2)
    dapo, frac = grpo_objective(lp, old, adv, mask, clip_epsilon=(0.2, 0.28))
    assert sym.item() == pytest.approx(-1.2)
    assert dapo.item() == pytest.approx(-1.25)
    assert frac.item() == 0.0


def test_clip_epsilon_is_validated():
    args = (torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1, 1), torch.ones(1, 1, dtype=bool))
    for bad in (0, -0.1, (0.2,), (0.2, 0.0), ("a", 0.2), True):
        with pytest.raises(ValueError, match=r"expected clip_epsilon > 0 .* got"):
            grpo_objective(*args, clip_epsilon=bad)


@pytest.mark.parametrize(
    ("length", "penalty"),
    [(0, 0.0), (12, 0.0), (13, -0.25), (15, -0.75), (16, -1.0), (17, -1.0), (1000, -1.0)],
)
def test_overlong_penalty_is_eq_13(length, penalty):
    # L_max = 16, L_cache = 4: free up to 12 tokens, then -1/4 per token, -1 from 16 on.
    got = overlong_penalty(torch.tensor([length]), max_length=16, cache_length=4)
    assert got.item() == pytest.approx(penalty)


def test_overlong_penalty_refuses_a_bad_band():
    with pytest.raises(
        ValueError, match="expected 1 <= cache_length <= max_length, got cache_length=0"
    ):
        overlong_penalty(torch.tensor([3]), max_length=16, cache_length=0)
    with pytest.raises(ValueError, match="cache_length=20, max_length=16"):
        OverlongRewardShaping(16, 20)


def test_overlong_reward_shaping_on_a_batch():
    # Response width 4; assistant tokens per response: 4, 2, 0 (an empty reply), 3.
    mask = torch.tensor(
        [[1, 1, 1, 1, 1], [0, 0, 1, 1, 0], [1, 0, 0, 0, 0], [0, 1, 1, 0, 1]], dtype=torch.bool
    )
    batch = TensorDict(
        {
            ("tokens", "response"): torch.zeros(4, 4, dtype=torch.long),
            ("masks", "all_assistant_mask"): mask,
            ("next", "reward"): torch.tensor([[1.0], [1.0], [0.0], [0.5]]),
        },
        batch_size=[4],
    )
    out = OverlongRewardShaping(4, 2)(batch)
    # Free up to 2 tokens: 4 -> -1, 2 -> 0, 0 -> 0, 3 -> -0.5.
    assert out["next", "reward"].squeeze(-1).tolist() == [0.0, 1.0, 0.0, 0.0]
    with pytest.raises(KeyError, match=r"expected the entry \('masks', 'all_assistant_mask'\)"):
        OverlongRewardShaping(4, 2)(batch.exclude(("masks", "all_assistant_mask")))
    batch["next", "reward"] = torch.zeros(4, 2)
    with pytest.raises(ValueError, match=r"one reward per dialog .* got shape \(4, 2\)"):
        OverlongRewardShaping(4, 2)(batch)


def _prompts_batch(rewards, prompts):
    n = len(prompts)
    return TensorDict(
        query=prompts,
        next=TensorDict(reward=torch.tensor(rewards).reshape(n, 1), batch_size=[n]),
        batch_size=[n],
    )


def test_dynamic_sampling_drops_all_right_and_all_wrong_groups():
    prompts = ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    rewards = [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    out = MCAdvantage(grpo_size=4, keep_return_bounds=(0, 1))(_prompts_batch(rewards, prompts))
    assert list(out["query"]) == ["c"] * 4
    # mean 0.5, unbiased std sqrt(1/3): advantages +-0.5 * sqrt(3).
    a = 0.5 * math.sqrt(3) * (1 - 1e-6 * math.sqrt(3))
    torch.testing.assert_close(
        out["advantage"].squeeze(-1), torch.tensor([a, -a, -a, a]), rtol=1e-6, atol=1e-6
    )
    # Without bounds the same batch keeps every group (equal rewards give advantage 0).
    whole = MCAdvantage(grpo_size=4)(_prompts_batch(rewards, prompts))
    assert whole.shape == (12,)
    assert whole["advantage"][:8].abs().max().item() == 0.0


def test_oversampled_groups_are_selected_then_filtered():
    # 4 candidates per prompt, groups of 2. "a": only one success among 4 -> [0, 3] is the
    # balanced pair; "b": all fail -> dropped.
    prompts = ["a"] * 4 + ["b"] * 4
    rewards = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    mc = MCAdvantage(grpo_size=2, candidate_group_size=4, keep_return_bounds=(0, 1))
    out = mc(_prompts_batch(rewards, prompts))
    assert out.shape == (2,)
    assert out["next", "reward"].squeeze(-1).tolist() == [0.0, 1.0]
    a = 0.5 / (math.sqrt(0.5) + 1e-6)
    torch.testing.assert_close(out["advantage"].squeeze(-1), torch.tensor([-a, a]))
    # Everything dropped: an empty batch, not an error.
    empty = mc(_prompts_batch([0.0] * 4, ["b"] * 4))
    assert empty.shape == (0,)
    assert empty["advantage"].shape == (0, 1)


def test_mc_advantage_validates_dynamic_sampling_options():
    with pytest.raises(
        ValueError, match="expected candidate_group_size >= grpo_size \\(4\\), got 2"
    ):
        MCAdvantage(grpo_size=4, candidate_group_size=2)
    with pytest.raises(
        ValueError, match="expected keep_return_bounds=\\(low, high\\) with low < high"
    ):
        MCAdvantage(grpo_size=2, keep_return_bounds=(1.0, 0.0))
    with pytest.raises(ValueError, match="expected a multiple of 4 responses per prompt"):
        MCAdvantage(grpo_size=2, candidate_group_size=4)(_prompts_batch([0.0] * 2, ["a"] * 2))


def test_dapo_loss_on_a_tiny_policy_matches_the_reference(tiny_model, tiny_tokenizer):
    torch.manual_seed(0)
    policy = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 6, "do_sample": True}
    )
    prompts = History.from_chats([[{"role": "user", "content": q}] for q in ["1+2?", "hi", "ok"]])
    batch = policy(TensorDict(history={"prompt": prompts}, batch_size=[3]))
    batch["advantage"] = torch.tensor([[1.0], [-0.5], [0.0]])
    batch["log_probs"].response = batch["log_probs"].response + 0.3 * torch.randn(
        batch["log_probs"].response.shape
    )
    loss_fn = DAPO(policy)
    assert loss_fn.clip_bounds == (0.2, 0.28)
    assert loss_fn.kl_to_ref_coeff is None
    out = loss_fn(batch)
    assert isinstance(out, DAPOLossOutput)
    assert set(out.keys()) == {"loss_objective", "clip_fraction", "kl_approx", "ESS"}
    width = batch["tokens"].response.shape[1]
    mask = batch["masks"].all_assistant_mask[:, -width:]
    full = torch.cat([batch["tokens"].prompt, batch["tokens"].response], -1)
    with torch.no_grad():
        lp = policy.log_probs_of(full, batch["masks"].all_attention_mask, last=width)
    expected, _ = _reference_dapo(
        lp.double().tolist(),
        batch["log_probs"].response.double().tolist(),
        [1.0, -0.5, 0.0],
        mask.tolist(),
        0.2,
        0.28,
    )
    assert out.loss_objective.item() == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert out.loss_objective.requires_grad
    assert 0 < out.ESS.item() <= 1
