"""MCTS simulations per second on tic-tac-toe, one root at a time against batches of roots.

Run from the repository root::

    uv run python benchmarks/rl_buffers/bench_mcts.py [--batches 1 16 64 256]
        [--simulations 64] [--rounds 5] [--net]

``rl_buffers.map.MCTS`` searches ``--simulations`` simulations from the empty board of each of
``B`` roots (``TicTacToeEnv(batch_size=[B])``); each simulation selects one leaf per root
(PUCT), expands all ``B`` leaves with one ``env.step`` and one evaluator call, and backs
the values up. ``--leaves L``: one root whose simulations each select ``L`` leaves with a
virtual loss (``leaves_per_root=L``), expanded together. The evaluator is uniform priors and zero values, or with ``--net`` the
example's two-layer policy-value MLP (64 units, untrained). A simulation per second counts
one leaf of one root. Each figure is the best of ``--rounds`` searches, in wall-clock time and
in the thread's CPU time (one core's work: other processes on a shared machine inflate it
less). One torch thread.
"""

from __future__ import annotations

import argparse
import time

import torch

from rl_buffers.map import MCTS, PUCTScore
from rl_envs.native import TicTacToeEnv


def make_evaluator(net: bool):
    if not net:
        return lambda td: (torch.zeros(td.batch_size[0], 9), torch.zeros(td.batch_size[0]))
    model = torch.nn.Sequential(
        torch.nn.Linear(27, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 10),
    )  # fmt: skip

    def evaluate(td):
        with torch.no_grad():
            cells = torch.nn.functional.one_hot(td["board"].flatten(-2).long() + 1, 3)
            out = model(cells.flatten(-2).float())
        return out[:, :9], torch.tanh(out[:, 9])

    return evaluate


def measure(
    batch: int, simulations: int, rounds: int, net: bool, leaves: int = 1
) -> tuple[float, float]:
    env = TicTacToeEnv(batch_size=[batch * leaves])
    search = MCTS(
        env,
        make_evaluator(net),
        num_simulations=simulations,
        score=PUCTScore(c=1.5),
        leaves_per_root=leaves,
    )
    root = TicTacToeEnv(batch_size=[batch]).reset()
    search(root)  # warm-up
    best_wall = best_cpu = float("inf")
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.thread_time()
        search(root)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.thread_time() - cpu)
    sims = batch * simulations * leaves
    return sims / best_wall, sims / best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64, 256])
    parser.add_argument("--simulations", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--net", action="store_true", help="evaluate with a policy-value MLP")
    parser.add_argument(
        "--leaves", type=int, nargs="*", default=[16],
        help="also one root with this many leaves per simulation (virtual loss)",
    )  # fmt: skip
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {args.simulations} simulations per search, evaluator: "
          f"{'policy-value MLP' if args.net else 'uniform'}")  # fmt: skip
    print("| roots per search | simulations/s (wall) | simulations/s (CPU) | vs one root (CPU) |")
    print("|---|---|---|---|")
    base = None
    for batch in args.batches:
        wall, cpu = measure(batch, args.simulations, args.rounds, args.net)
        base = base or cpu
        print(f"| {batch} | {wall:,.0f} | {cpu:,.0f} | {cpu / base:.1f}x |")
    for leaves in args.leaves:
        wall, cpu = measure(1, args.simulations, args.rounds, args.net, leaves)
        print(
            f"| 1, {leaves} leaves per simulation | {wall:,.0f} | {cpu:,.0f} | {cpu / base:.1f}x |"
        )


if __name__ == "__main__":
    main()
