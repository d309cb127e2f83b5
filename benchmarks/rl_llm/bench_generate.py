"""TransformersWrapper generation with per-token log-probs vs plain ``model.generate``.

Both sides start from the same left-padded prompt ids, sample ``NEW`` tokens for a batch of
prompts, and return per-token log-probs of the sampled response with a mask that stops after
the end of sequence. The reference is ``model.generate(..., output_scores=True)`` plus a
``log_softmax``/gather; the wrapper (``input_mode="tokens"``) also builds its TensorDict
outputs (Tokens, Masks, LogProbs). A second line compares ``input_mode="history"`` with a
reference that also renders the chat template, tokenizes and decodes.

Run: ``uv run python benchmarks/rl_llm/bench_generate.py [--hidden 64] [--layers 2]``
"""

from __future__ import annotations

import argparse
import time

import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.modules import TransformersWrapper
from rl_llm.modules._log_probs import response_mask
from rl_llm.testing import build_tiny_chat_model

BATCH, NEW, REPEATS = 16, 32, 5


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
    model, tokenizer = build_tiny_chat_model(hidden_size=args.hidden, num_layers=args.layers)
    kwargs = {"max_new_tokens": NEW, "min_new_tokens": NEW, "do_sample": True, "top_k": 0}
    history = History.from_chats(
        [
            [{"role": "user", "content": f"What is {i}+{i + 1}? think step by step"}]
            for i in range(BATCH)
        ]
    )
    texts = history.apply_chat_template(tokenizer)
    enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    eos = model.generation_config.eos_token_id

    @torch.no_grad()
    def reference(decode: bool = False):
        if decode:
            t = history.apply_chat_template(tokenizer)
            e = tokenizer(t, return_tensors="pt", padding=True, add_special_tokens=False)
        else:
            e = enc
        out = model.generate(
            **e,
            output_scores=True,
            return_dict_in_generate=True,
            pad_token_id=tokenizer.pad_token_id,
            **kwargs,
        )
        response = out.sequences[:, e["input_ids"].shape[1] :]
        scores = torch.stack(out.scores, 1).float()
        lp = scores.log_softmax(-1).gather(-1, response.unsqueeze(-1)).squeeze(-1)
        mask = response_mask(response, eos)
        lp = lp.masked_fill(~mask, 0.0)
        if decode:
            tokenizer.batch_decode([r[m].tolist() for r, m in zip(response, mask)])
        return lp

    tok_policy = TransformersWrapper(model, tokenizer, input_mode="tokens", generate_kwargs=kwargs)
    hist_policy = TransformersWrapper(
        model, tokenizer, input_mode="history", generate_kwargs=kwargs
    )
    tok_td = TensorDict(tokens={"prompt": enc["input_ids"]}, batch_size=[BATCH])
    hist_td = TensorDict(history={"prompt": history}, batch_size=[BATCH])

    print(
        f"model hidden={args.hidden} layers={args.layers}, batch {BATCH}, {NEW} new tokens, "
        f"1 thread, best of {REPEATS}"
    )
    for name, ref, ours in (
        ("tokens in", lambda: reference(False), lambda: tok_policy(tok_td.clone())),
        ("history in", lambda: reference(True), lambda: hist_policy(hist_td.clone())),
    ):
        # Interleave the two sides so the machine's load hits both alike.
        r, o = float("inf"), float("inf")
        for _ in range(3):
            r = min(r, best_of(ref))
            o = min(o, best_of(ours))
        print(
            f"{name:11s} plain generate {r * 1e3:8.1f} ms   TransformersWrapper "
            f"{o * 1e3:8.1f} ms   ratio {o / r:.3f}"
        )


if __name__ == "__main__":
    main()
