"""Frames to a CartPole-v1 return of 475, mean over seeds: ``examples/ppo.py`` with its
defaults against ``examples/ppo.py`` with CleanRL's published PPO hyperparameters.

CleanRL documents the settings of its ``ppo.py`` for CartPole-v1 (the hyperparameter block of
its model card, https://huggingface.co/cleanrl/ppo): 4 envs, 128 steps per env per update
(512-frame batches), 4 minibatches of 128, 4 epochs, learning rate 2.5e-4 annealed linearly to
0 over 500,000 frames, Adam eps 1e-5, gamma 0.99, GAE lambda 0.95, clip 0.2 with the value
loss clipped too, entropy coefficient 0.01, value coefficient 0.5 on half the squared error
(0.25 on the squared error), gradient norm clipped at 0.5, advantages normalised per
minibatch, two 64-unit tanh layers. The ``CLEANRL`` flags below express those settings with
``examples/ppo.py``'s options: the same algorithm and budget, run by this library (CleanRL's
code is neither copied nor run). What differs: CleanRL initialises its layers orthogonally,
``ppo.py`` with torch's defaults; both use separate actor and critic networks.

Each run stops at the first batch after which the mean return of the last 10 finished
training episodes is at least 475; a run that never gets there within its budget counts as
its budget (a lower bound, flagged). The runs are deterministic for a seed on one machine.

    uv run python benchmarks/examples/bench_ppo_cleanrl_parity.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
from pathlib import Path

import torch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TARGET = 475.0
CLEANRL_TOTAL_FRAMES = 500_000
CLEANRL = (
    "--num-envs 4 --frames-per-batch 512 --minibatch-size 128 --num-epochs 4 --lr 2.5e-4 "
    "--anneal-lr --gamma 0.99 --gae-lambda 0.95 --clip-epsilon 0.2 --clip-value "
    "--entropy-coeff 0.01 --critic-coeff 0.25 --max-grad-norm 0.5 --hidden 64 "
    f"--total-frames {CLEANRL_TOTAL_FRAMES}"
)
SETTINGS = {"ppo.py defaults": "", "CleanRL's settings": CLEANRL}


def load_ppo_example():
    # ppo.py imports its neighbours (``_recipe``) as a script run from examples/ does.
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location("example_ppo", EXAMPLES / "ppo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def frames_to_target(ppo, flags: str, seed: int) -> tuple[int, bool, float]:
    """``(frames, reached, seconds)`` of one run; ``frames`` is the budget when not reached."""
    with tempfile.TemporaryDirectory() as out:
        cfg = ppo.parse_config(
            [*flags.split(), "--seed", str(seed), "--target-return", str(TARGET),
             "--out-dir", out, "--exp-name", "bench", "--no-plot"]
        )  # fmt: skip
        result = ppo.train(cfg)
    reached = result["frames_to_target"] is not None
    return result["frames"], reached, result["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1 for each setting")
    args = parser.parse_args()
    torch.set_num_threads(1)
    ppo = load_ppo_example()
    runs: dict[str, list[tuple[int, bool, float]]] = {name: [] for name in SETTINGS}
    for seed in range(args.seeds):
        for name, flags in SETTINGS.items():
            frames, reached, seconds = frames_to_target(ppo, flags, seed)
            runs[name].append((frames, reached, seconds))
            note = "" if reached else " (not reached: budget)"
            print(f"seed {seed}  {name:<20} {frames:>7} frames{note}  {seconds:6.1f} s")
    means = {}
    for name, rows in runs.items():
        frames = [f for f, _, _ in rows]
        reached = sum(r for _, r, _ in rows)
        means[name] = statistics.mean(frames)
        spread = statistics.stdev(frames) if len(frames) > 1 else 0.0
        print(
            f"{name:<20} frames to {TARGET:.0f}: mean {means[name]:.0f} (std {spread:.0f}, "
            f"min {min(frames)}, max {max(frames)}), reached {reached}/{len(rows)}"
        )
    ours, theirs = means["ppo.py defaults"], means["CleanRL's settings"]
    print(f"ratio defaults / CleanRL's settings (mean frames): {ours / theirs:.2f}")
    print(f"CleanRL's documented budget: {CLEANRL_TOTAL_FRAMES} frames")


if __name__ == "__main__":
    main()
