"""The benchmark suite: every workload against its plain reference, TorchRL's beside it.

Run from the repository root::

    uv run python benchmarks/run.py [--only envs,collectors,buffers,values,losses,imports,ppo]
        [--quick] [--peers] [--out benchmarks/results]

Each group of workloads runs in its own process (``benchmarks/suite/workloads.py``): every
workload alternates with its plain reference (gymnasium, numpy and torch alone:
``benchmarks/suite/plain.py``) in that process, repeated; the figures are the medians with
min and max, and the ratios to the reference taken per repeat. ``--peers`` runs, right after
each group, the same workloads through TorchRL 0.14 in its own environment
(``benchmarks/torchrl_reference``, a separate uv project: ``uv run --project
benchmarks/torchrl_reference``), each against the same plain reference in its process, and
the PPO wall time against stable-baselines3 (``uv run --group bench``).

Writes ``results.json`` (machine, versions, load averages, every sample), ``results.md`` (the
table) and one bar chart per group (``<group>.png``) under ``--out`` (default
``benchmarks/results``, or ``benchmarks/results/quick`` with ``--quick``). ``--quick`` runs
small sizes and few repeats to check that the suite works (CI runs it); its figures are not
for publishing.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
ROOT = BENCHMARKS.parent
sys.path.insert(0, str(BENCHMARKS / "suite"))

import report  # noqa: E402

GROUPS = report.GROUPS

PEER_PROJECT = BENCHMARKS / "torchrl_reference"
PEER_GROUPS = ("envs", "collectors", "buffers", "values", "losses", "imports")
PACKAGES = ("rl-core", "rl-envs", "rl-buffers", "rl-collectors", "rl-objectives")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        default=",".join(GROUPS),
        help=f"comma-separated groups among {', '.join(GROUPS)} (default: all)",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--peers", action="store_true", help="TorchRL and SB3 beside ours")
    parser.add_argument("--out", type=Path, default=None, help="the results folder")
    args = parser.parse_args(argv)
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown or not groups:
        parser.error(
            f"--only: expected groups among {', '.join(GROUPS)}, got {args.only!r} "
            f"(unknown: {', '.join(unknown) or 'none given'})."
        )
    args.groups = groups
    if args.out is None:
        args.out = BENCHMARKS / "results" / ("quick" if args.quick else "")
    return args


def run_worker(command: list[str], json_path: Path, label: str) -> dict[str, Any] | None:
    """Runs one worker process; its results, or ``None`` (and why, printed) if it failed."""
    print(f"--- {label}: {' '.join(command)}", flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, check=False)
    if done.returncode != 0 or not json_path.exists():
        print(f"--- {label} failed (exit {done.returncode})", flush=True)
        return None
    print(f"--- {label} done in {time.perf_counter() - start:.0f} s", flush=True)
    return json.loads(json_path.read_text())


def uv() -> str | None:
    return shutil.which("uv")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    machine = report.machine_info()
    for package in PACKAGES:
        try:
            machine["versions"][package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    machine["load_average_start"] = report.load_average()
    machine["date"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "uv run python benchmarks/run.py" + "".join(
        [
            f" --only {','.join(args.groups)}" if args.groups != list(GROUPS) else "",
            " --quick" if args.quick else "",
            " --peers" if args.peers else "",
        ]
    )
    results: list[dict[str, Any]] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        # One process per group; --quick runs them all in one process (interpreter and
        # torch start-up once: CI's budget), each workload still beside its reference.
        batches = [",".join(args.groups)] if args.quick else args.groups
        for batch in batches:
            ours_json = Path(scratch) / f"{batch.replace(',', '_')}.json"
            worker = [str(BENCHMARKS / "suite" / "workloads.py"), "--group", batch]
            worker += ["--json", str(ours_json)] + (["--quick"] if args.quick else [])
            if "ppo" in batch.split(",") and args.peers:
                launcher = [uv(), "run", "--group", "bench", "python"] if uv() else None
                if launcher is None:
                    failures.append("ppo with SB3: uv not found on PATH")
                    launcher = [sys.executable]
            else:
                launcher = [sys.executable]
            ours = run_worker([*launcher, *worker], ours_json, batch)
            if ours is None:
                failures.append(f"{batch}: the worker failed (see its output above)")
                continue
            failures += ours.get("failures", [])
            summaries = [report.summarize(r) for r in ours["results"]]
            peer_groups = [g for g in batch.split(",") if g in PEER_GROUPS]
            if args.peers and peer_groups:
                peer = run_peer(",".join(peer_groups), args.quick, Path(scratch))
                if peer is None:
                    failures.append(f"{batch}: the TorchRL peer failed (see its output above)")
                else:
                    failures += [f"TorchRL {f}" for f in peer.get("failures", [])]
                    machine["versions"].update(
                        {f"peer {k}": v for k, v in peer["versions"].items()}
                    )
                    by_name = {r["name"]: report.summarize(r) for r in peer["results"]}
                    for summary in summaries:
                        if summary["name"] in by_name:
                            summary["peer"] = by_name[summary["name"]]
            results += summaries
            # Written after each group too: an interrupted run keeps what it measured.
            machine["failures"] = failures
            report.write_json(args.out / "results.json", machine, results)
    machine["load_average_end"] = report.load_average()
    machine["failures"] = failures
    report.write_json(args.out / "results.json", machine, results)
    header = (
        f"Run {machine['date']}, load average {machine['load_average_start']} at the start, "
        f"{machine['load_average_end']} at the end."
    )
    table = report.markdown_table(machine, results, command=command)
    (args.out / "results.md").write_text(header + "\n\n" + table)
    charts = report.bar_charts(results, args.out)
    print("\n" + header + "\n\n" + table)
    print("wrote " + ", ".join(str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p)
                               for p in [args.out / "results.json", args.out / "results.md", *charts]))  # fmt: skip
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


def run_peer(group: str, quick: bool, scratch: Path) -> dict[str, Any] | None:
    """The group's workloads through TorchRL, in ``benchmarks/torchrl_reference``'s env."""
    if uv() is None:
        print("--- peers need uv on PATH", flush=True)
        return None
    peer_json = scratch / f"{group.replace(',', '_')}.peer.json"
    command = [
        uv(), "run", "--locked", "--project", str(PEER_PROJECT), "python",
        str(PEER_PROJECT / "suite_peer.py"), "--group", group, "--json", str(peer_json),
    ] + (["--quick"] if quick else [])  # fmt: skip
    return run_worker(command, peer_json, f"{group} (TorchRL)")


if __name__ == "__main__":
    sys.exit(main())
