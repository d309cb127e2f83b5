"""Pairs of prioritized-replay runs, ours against TorchRL's, and the median of their ratios.

rl-buffers and TorchRL cannot share a process (TorchRL pins its own torch, see
``pyproject.toml``), so the issue's "5x TorchRL on the same machine" is measured in pairs:
``benchmarks/rl_buffers/bench_buffers.py --only prioritized`` in the workspace's
environment, then ``bench_prioritized.py`` in TorchRL's, one after the other, ``--pairs``
times. Both print one core's CPU time (``thread_time``) per iteration of the same loop
(``sample()`` of 256 + ``update_tensordict_priority`` over 200k items, blocks of 20 after a
numpy step) and the same numpy cumulative-sum step. A pair whose two numpy steps differ by
more than ``--tolerance`` ran on a machine that changed speed between its halves: it is
listed but left out of the median.

Run from the repository root::

    uv run python benchmarks/torchrl_reference/pairs_prioritized.py [--pairs 5]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = [sys.executable, "benchmarks/rl_buffers/bench_buffers.py", "--only", "prioritized"]
THEIRS = [
    "uv",
    "run",
    "--project",
    "benchmarks/torchrl_reference",
    "python",
    "benchmarks/torchrl_reference/bench_prioritized.py",
]


def cpu_rate(output: str, label: str) -> float:
    """The CPU-time iterations per second of the line starting with ``label`` (the last
    number of that line, the "one core" column)."""
    for line in output.splitlines():
        if line.strip().startswith(label):
            return float(re.findall(r"\d+", line)[-1])
    raise RuntimeError(f"pairs_prioritized: no line starting with {label!r} in:\n{output}")


def run(command: list[str]) -> str:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"pairs_prioritized: {' '.join(command)} exited with {done.returncode}:\n"
            f"{done.stdout}\n{done.stderr}"
        )
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.03,
        help="largest relative difference of the two numpy steps in a pair that is kept",
    )
    args = parser.parse_args()
    if args.pairs < 1:
        parser.error(f"expected --pairs >= 1, got {args.pairs}")
    print("pair   ours it/s   TorchRL it/s   ratio   numpy step (ours / TorchRL's run)")
    kept = []
    for pair in range(1, args.pairs + 1):
        ours_out, theirs_out = run(OURS), run(THEIRS)
        ours = cpu_rate(ours_out, "kernels: compiled")
        theirs = cpu_rate(theirs_out, "TorchRL")
        numpy_ours = cpu_rate(ours_out, "numpy cumsum")
        numpy_theirs = cpu_rate(theirs_out, "numpy cumsum")
        steady = abs(numpy_ours / numpy_theirs - 1) <= args.tolerance
        if steady:
            kept.append(ours / theirs)
        note = "" if steady else "   (numpy steps differ: left out)"
        print(
            f"{pair:4d}   {ours:9.0f}   {theirs:12.0f}   {ours / theirs:5.2f}x"
            f"   {numpy_ours:.0f} / {numpy_theirs:.0f}{note}",
            flush=True,
        )
    if kept:
        at_five = sum(ratio >= 5 for ratio in kept)
        print(
            f"median ratio {statistics.median(kept):.2f}x over {len(kept)} pair(s) "
            f"(range {min(kept):.2f}x-{max(kept):.2f}x; {at_five} of {len(kept)} at 5x or more)"
        )
    else:
        print("no pair kept: every pair's numpy steps differed by more than the tolerance")


if __name__ == "__main__":
    main()
