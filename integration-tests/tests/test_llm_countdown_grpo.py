"""GRPO on CountdownEnv with a tiny offline model, and SFT lowering a held-out loss.

The tiny model (random init, 2 layers, hidden 64) cannot find the ``<answer>`` format by
chance, so the GRPO run starts from a short SFT warm-up on the four puzzles' prompts with a
random operator in the answer (``<answer>2*3</answer>`` for the target 5): the format and the
numbers are learnt, the operator is right about a third of the time (reward ~0.35: 1.0 for a
correct expression, 0.1 for a tagged wrong one). GRPO then has to pick the right operator per
puzzle from the Countdown reward alone.
"""

from __future__ import annotations

import random

import pytest
import torch
from tensordict import TensorDict

from rl_llm.collectors import LLMCollector
from rl_llm.data import History
from rl_llm.envs import CountdownEnv, make_arithmetic_dataset
from rl_llm.envs.countdown import COUNTDOWN_PROMPT, countdown_question
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import GRPOLoss, MCAdvantage, SFTLoss
from rl_llm.testing import build_tiny_chat_model

PUZZLES = [([2, 3], 5), ([4, 1], 3), ([3, 3], 9), ([2, 4], 8)]  # one operator reaches each


def _sft_steps(model, tokenizer, chats_fn, steps: int, lr: float) -> None:
    loss_fn = SFTLoss(TransformersWrapper(model, tokenizer, generate=False))
    optim = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        chats = History.from_chats(chats_fn())
        loss = loss_fn(TensorDict(history={"full": chats}, batch_size=[chats.batch_size[0]]))
        optim.zero_grad()
        loss["loss_sft"].backward()
        optim.step()
    model.eval()


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.learning
def test_grpo_on_countdown_raises_the_reward(one_thread):
    torch.manual_seed(0)
    rng = random.Random(0)
    model, tokenizer = build_tiny_chat_model(seed=0)

    def warmup_chats():
        out = []
        for _ in range(16):
            (a, b), target = rng.choice(PUZZLES)
            out.append(
                [
                    {"role": "system", "content": COUNTDOWN_PROMPT},
                    {"role": "user", "content": countdown_question([a, b], target)},
                    {"role": "assistant", "content": f"<answer>{a}{rng.choice('+-*')}{b}</answer>"},
                ]
            )
        return out

    _sft_steps(model, tokenizer, warmup_chats, steps=120, lr=1e-3)

    env = CountdownEnv(
        [{"numbers": n, "target": t} for n, t in PUZZLES],
        batch_size=(32,),
        repeats=8,
        shuffle=True,
        seed=0,
    )
    policy = TransformersWrapper(
        model, tokenizer, generate_kwargs={"max_new_tokens": 10, "do_sample": True}
    )
    collector = LLMCollector(
        env, policy, dialog_turns_per_batch=32, postproc=MCAdvantage(grpo_size=8)
    )
    loss_fn = GRPOLoss(policy, clip_epsilon=0.2)
    optim = torch.optim.Adam(model.parameters(), lr=5e-4)
    rewards = []
    for i, batch in enumerate(collector):
        rewards.append(batch["next", "reward"].mean().item())
        model.train()
        for _ in range(2):
            loss = loss_fn(batch)["loss_objective"]
            optim.zero_grad()
            loss.backward()
            optim.step()
        model.eval()
        if i + 1 == 30:
            break
    start, end = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert end > start + 0.07, f"reward went from {start:.3f} to {end:.3f}: {rewards}"


@pytest.mark.slow
@pytest.mark.learning
def test_sft_lowers_the_held_out_loss(one_thread):
    torch.manual_seed(0)
    model, tokenizer = build_tiny_chat_model(seed=1)
    train = make_arithmetic_dataset(256, max_operand=49, seed=0)
    held_out = make_arithmetic_dataset(32, max_operand=49, seed=123)
    seen = {row["question"] for row in train}
    held_out = [row for row in held_out if row["question"] not in seen]
    assert len(held_out) >= 8

    def chats(rows):
        return [
            [
                {"role": "user", "content": r["question"]},
                {"role": "assistant", "content": f"<answer>{r['answer']}</answer>"},
            ]
            for r in rows
        ]

    scorer = SFTLoss(TransformersWrapper(model, tokenizer, generate=False))
    held = History.from_chats(chats(held_out))
    held_td = TensorDict(history={"full": held}, batch_size=[held.batch_size[0]])
    with torch.no_grad():
        before = scorer(held_td.clone())["loss_sft"].item()
    rng = random.Random(0)
    _sft_steps(model, tokenizer, lambda: chats(rng.sample(train, 16)), steps=60, lr=2e-3)
    with torch.no_grad():
        after = scorer(held_td.clone())["loss_sft"].item()
    assert after < 0.6 * before, f"held-out loss went from {before:.3f} to {after:.3f}"
