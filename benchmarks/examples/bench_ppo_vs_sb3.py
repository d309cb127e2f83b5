"""Wall time and frames to a CartPole-v1 return of 475: ``examples/ppo.py`` against
stable-baselines3's PPO with its default hyperparameters, in one process.

Both are timed from the start of training to the first moment the mean return of the last 10
finished training episodes reaches 475 (the same criterion on both sides), with one torch
thread each. Runs alternate (SB3, ours, SB3, ours, ...) so that a load change on the machine
hits both alike; the script prints every run, then the median of each side and their ratio.

Needs the ``bench`` dependency group (stable-baselines3, not in the default environment):

    uv run --group bench python benchmarks/examples/bench_ppo_vs_sb3.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TARGET = 475.0
SB3_BUDGET = 300_000  # frames; SB3's defaults reach the target well before this


def load_ppo_example():
    # ppo.py imports its neighbours (``_recipe``) as a script run from examples/ does.
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location("example_ppo", EXAMPLES / "ppo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_ours(ppo, seed: int) -> tuple[float, int | None, float]:
    """Wall seconds to the target, frames to it (``None``: not reached), CPU seconds."""
    cpu = time.process_time()
    with tempfile.TemporaryDirectory() as out:
        cfg = ppo.parse_config(
            ["--seed", str(seed), "--target-return", str(TARGET), "--out-dir", out,
             "--exp-name", "bench", "--no-plot"]
        )  # fmt: skip
        result = ppo.train(cfg)
    return result["seconds"], result["frames_to_target"], time.process_time() - cpu


def run_sb3(seed: int) -> tuple[float, int | None, float]:
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    class StopAtTarget(BaseCallback):
        """Stops training once the last 10 finished episodes average ``TARGET``."""

        def __init__(self) -> None:
            super().__init__()
            self.frames: int | None = None

        def _on_step(self) -> bool:
            episodes = list(self.model.ep_info_buffer)[-10:]
            if len(episodes) == 10 and sum(e["r"] for e in episodes) / 10 >= TARGET:
                self.frames = self.num_timesteps
                return False
            return True

    model = PPO("MlpPolicy", "CartPole-v1", seed=seed, device="cpu", verbose=0)
    stop = StopAtTarget()
    start, cpu = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=SB3_BUDGET, callback=stop)
    return time.perf_counter() - start, stop.frames, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per side (seeds 0, 1, ...)")
    args = parser.parse_args()
    try:
        import stable_baselines3
    except ImportError:
        sys.exit("needs stable-baselines3: uv run --group bench python " + " ".join(sys.argv))
    torch.set_num_threads(1)
    ppo = load_ppo_example()
    print(f"stable-baselines3 {stable_baselines3.__version__}, torch {torch.__version__}")
    ours, sb3 = [], []
    for seed in range(args.repeats):
        for name, runs, run in (("sb3 PPO", sb3, run_sb3), ("examples/ppo", ours, run_ours)):
            t, f, cpu = run(seed) if run is run_sb3 else run(ppo, seed)
            runs.append((t, f, cpu))
            rate = f"{f / t:,.0f} frames/s (wall), {f / cpu:,.0f} per CPU second" if f else "-"
            print(
                f"seed {seed}  {name:<13} {t:6.1f} s ({cpu:.1f} s CPU)  frames to {TARGET:.0f}: {f}; {rate}"
            )
    for name, runs in (("sb3 PPO", sb3), ("examples/ppo", ours)):
        reached = [r for r in runs if r[1] is not None]
        print(
            f"{name:<13} reached {len(reached)}/{len(runs)}; median "
            f"{statistics.median(t for t, _, _ in runs):.1f} s "
            f"({statistics.median(c for _, _, c in runs):.1f} s CPU), "
            f"{statistics.median(f for _, f, _ in reached) if reached else float('nan'):.0f} frames, "
            f"{statistics.median(f / c for _, f, c in reached) if reached else float('nan'):,.0f} "
            f"frames per CPU second"
        )
    ratio = statistics.median(t for t, _, _ in ours) / statistics.median(t for t, _, _ in sb3)
    cpu_ratio = statistics.median(c for *_, c in ours) / statistics.median(c for *_, c in sb3)
    print(f"time ratio examples/ppo / sb3 (median): {ratio:.2f} wall, {cpu_ratio:.2f} CPU")


if __name__ == "__main__":
    main()
