"""GRPO on a tiny offline chat model: the reward rises on a toy task within a few dozen updates.

The toy task: reply with digits. The reward of a reply is the fraction of its characters that
are digits (a random tiny model starts around a few percent). A DatasetChatEnv serves groups
of identical prompts, a reward transform scores the replies, LLMCollector gathers batches,
MCAdvantage computes group-relative advantages and GRPOLoss updates the policy in place.
"""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDictBase

from rl_core import Transform, TransformedEnv
from rl_llm.collectors import LLMCollector
from rl_llm.envs import DatasetChatEnv
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import GRPOLoss, MCAdvantage
from rl_llm.testing import build_tiny_chat_model


class DigitReward(Transform):
    """Reward = fraction of digit characters in the last reply; every dialog ends after it."""

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase):
        replies = [str(r) for r in next_tensordict["history"].prompt[..., -1].content]
        scores = [sum(c.isdigit() for c in r) / max(len(r), 1) for r in replies]
        next_tensordict["reward"] = torch.tensor(scores).unsqueeze(-1)
        next_tensordict["done"] = torch.ones_like(next_tensordict["done"])
        next_tensordict["terminated"] = torch.ones_like(next_tensordict["terminated"])
        return next_tensordict


def run_grpo(steps: int, *, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    model, tokenizer = build_tiny_chat_model(seed=seed)
    prompts = [f"Reply with a number please {i}" for i in range(8)]
    group = 4
    env = TransformedEnv(
        DatasetChatEnv(prompts, batch_size=(16,), repeats=group, shuffle=True, seed=seed),
        DigitReward(),
    )
    policy = TransformersWrapper(
        model, tokenizer, generate_kwargs={"max_new_tokens": 6, "do_sample": True}
    )
    collector = LLMCollector(
        env, policy, dialog_turns_per_batch=16, postproc=MCAdvantage(grpo_size=group)
    )
    loss_fn = GRPOLoss(policy, clip_epsilon=0.2)
    optim = torch.optim.Adam(model.parameters(), lr=3e-3)
    rewards = []
    for i, batch in enumerate(collector):
        rewards.append(batch["next", "reward"].mean().item())
        model.train()
        for _ in range(2):  # two epochs over each batch (the ratio leaves 1 on the second)
            loss = loss_fn(batch)["loss_objective"]
            optim.zero_grad()
            loss.backward()
            optim.step()
        model.eval()
        if i + 1 == steps:
            break
    return rewards


@pytest.mark.slow
@pytest.mark.learning
def test_grpo_raises_the_reward_of_a_tiny_model():
    # One torch thread: on a 64-wide model more threads only contend (with the default thread
    # count this took 2-3 min on a loaded 2-core machine, with one thread 3-22 s).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rewards = run_grpo(24)
    finally:
        torch.set_num_threads(threads)
    start = sum(rewards[:4]) / 4
    end = sum(rewards[-4:]) / 4
    assert end > start + 0.3, f"reward went from {start:.3f} to {end:.3f}: {rewards}"
