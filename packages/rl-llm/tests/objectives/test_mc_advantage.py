import pytest
import torch
from tensordict import TensorDict

from rl_llm.objectives import MCAdvantage, group_advantages


def _reference(rewards, prompts):
    out = []
    for r, p in zip(rewards, prompts):
        group = [x for x, q in zip(rewards, prompts) if q == p]
        mean = sum(group) / len(group)
        std = (sum((x - mean) ** 2 for x in group) / (len(group) - 1)) ** 0.5
        out.append((r - mean) / (std + 1e-6))
    return out


def test_matches_a_hand_written_reference():
    g = torch.Generator().manual_seed(0)
    prompts = ["a", "b", "c"] * 4
    rewards = torch.rand(12, generator=g)
    batch = TensorDict(
        query=prompts,
        next=TensorDict(reward=rewards.unsqueeze(-1), batch_size=[12]),
        batch_size=[12],
    )
    out = MCAdvantage(grpo_size=4)(batch)["advantage"].squeeze(-1)
    torch.testing.assert_close(out, torch.tensor(_reference(rewards.tolist(), prompts)))
    # Within each group the advantages are centred with unit (unbiased) std.
    for p in "abc":
        idx = [i for i, q in enumerate(prompts) if q == p]
        assert abs(out[idx].mean().item()) < 1e-5
        assert abs(out[idx].std().item() - 1) < 1e-4


def test_a_prompt_drawn_twice_makes_two_groups():
    batch = TensorDict(
        query=["a", "a", "a", "a"],
        next=TensorDict(reward=torch.tensor([[1.0], [3.0], [10.0], [20.0]]), batch_size=[4]),
        batch_size=[4],
    )
    out = MCAdvantage(grpo_size=2, normalize_std=False)(batch)["advantage"].squeeze(-1)
    assert out.tolist() == [-1.0, 1.0, -5.0, 5.0]


def test_equal_rewards_give_zero_advantage():
    adv = group_advantages(torch.ones(4), torch.tensor([0, 0, 1, 1]))
    assert torch.equal(adv, torch.zeros(4))


def test_bad_input_is_reported():
    batch = TensorDict(
        query=["a", "a", "b"],
        next=TensorDict(reward=torch.zeros(3, 1), batch_size=[3]),
        batch_size=[3],
    )
    with pytest.raises(
        ValueError, match=r"expected a multiple of 2 responses per prompt, got \{'b': 1\}"
    ):
        MCAdvantage(grpo_size=2)(batch)
    with pytest.raises(ValueError, match="expected a 1-d batch of dialogs"):
        MCAdvantage(grpo_size=1)(batch.unsqueeze(0))
    with pytest.raises(ValueError, match="expected grpo_size >= 1"):
        MCAdvantage(grpo_size=0)
