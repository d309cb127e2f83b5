"""One GRPO update with GRPOLoss vs the same update written in plain torch/transformers.

Both sides take the same batch of sampled responses (generated once), recompute the response
log-probs with the model (with gradients), form the clipped surrogate with group-relative
advantages, and run ``backward``. Only the update is timed, not the generation.

Run: ``uv run python benchmarks/rl_llm/bench_grpo_update.py [--hidden 64] [--layers 2]``
"""

from __future__ import annotations

import argparse
import time

import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import GRPOLoss
from rl_llm.testing import build_tiny_chat_model

BATCH, NEW, EPS, REPEATS = 16, 32, 0.2, 5


def best_of(fn, repeats: int = REPEATS) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model, tokenizer = build_tiny_chat_model(hidden_size=args.hidden, num_layers=args.layers)
    policy = TransformersWrapper(
        model, tokenizer, generate_kwargs={"max_new_tokens": NEW, "do_sample": True}
    )
    history = History.from_chats(
        [[{"role": "user", "content": f"What is {i % 4}+{i % 4 + 1}?"}] for i in range(BATCH)]
    )
    batch = policy(TensorDict(history={"prompt": history}, batch_size=[BATCH]))
    rewards = torch.rand(BATCH)
    groups = rewards.view(-1, 4)
    adv = (groups - groups.mean(-1, keepdim=True)) / (groups.std(-1, keepdim=True) + 1e-6)
    batch["advantage"] = adv.reshape(-1, 1)
    loss_fn = GRPOLoss(policy, clip_epsilon=EPS)
    model.train()

    prompt, response = batch["tokens"].prompt, batch["tokens"].response
    attn = batch["masks"].all_attention_mask
    old = batch["log_probs"].response
    advantage = batch["advantage"]

    def plain():
        full = torch.cat([prompt, response], -1)
        pos = (attn.long().cumsum(-1) - 1).clamp(min=0)
        logits = (
            model(input_ids=full, attention_mask=attn.long(), position_ids=pos, use_cache=False)
            .logits[:, -response.shape[1] - 1 : -1]
            .float()
        )
        lp = logits.log_softmax(-1).gather(-1, response.unsqueeze(-1)).squeeze(-1)
        mask = attn[:, -response.shape[1] :].float()
        ratio = (lp - old).exp()
        surr = torch.minimum(ratio * advantage, ratio.clamp(1 - EPS, 1 + EPS) * advantage)
        loss = -(surr * mask).sum() / mask.sum()
        model.zero_grad()
        loss.backward()
        return loss

    def ours():
        loss = loss_fn(batch)["loss_objective"]
        model.zero_grad()
        loss.backward()
        return loss

    torch.testing.assert_close(plain(), ours(), atol=1e-5, rtol=1e-5)
    r, o = float("inf"), float("inf")
    for _ in range(3):  # interleaved, so the machine's load hits both sides alike
        r = min(r, best_of(plain))
        o = min(o, best_of(ours))
    print(
        f"model hidden={args.hidden} layers={args.layers}, batch {BATCH}, {NEW} response "
        f"tokens, 1 thread, best of {REPEATS}"
    )
    print(f"plain torch {r * 1e3:8.1f} ms   GRPOLoss {o * 1e3:8.1f} ms   ratio {o / r:.3f}")


if __name__ == "__main__":
    main()
