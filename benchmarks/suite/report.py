"""The suite's numbers and how they are written: statistics, JSON, the markdown table, charts.

Pure Python (matplotlib only for the charts, imported when they are drawn), so the peer
environment (``benchmarks/torchrl_reference``) and the tests load it without the workspace's
packages.

A workload's result, as a worker prints it (one JSON object)::

    {"group": "envs", "name": "...", "unit": "us/step", "clock": "cpu",
     "reference": "plain", "samples": {"plain": [...], "ours": [...]},
     "load": [before, after], "notes": "..."}

``samples`` holds one time per repeat for each variant (seconds per unit of work), measured
alternately in the same process. :func:`summarize` turns them into medians with min/max and
the ratios to the reference, each taken per repeat (the variant's time over the reference's
time of the same repeat), then their median, min and max.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

GROUPS = ("envs", "collectors", "buffers", "values", "losses", "imports", "ppo")
UNIT_SCALE = {"us": 1e6, "ms": 1e3, "s": 1.0}


def measure(
    variants: dict[str, Callable[[], float]], repeats: int, *, warmup: int = 1
) -> dict[str, list[float]]:
    """Runs each variant ``repeats`` times, alternating; returns each variant's times.

    Every callable runs one block of work and returns its time per unit (seconds). The order
    rotates from one repeat to the next, so a busy spell on the machine hits all variants
    alike and none always runs first.
    """
    if repeats < 1:
        raise ValueError(f"measure: expected repeats >= 1, got {repeats}.")
    names = list(variants)
    for _ in range(warmup):
        for name in names:
            variants[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            samples[name].append(float(variants[name]()))
    return samples


def load_average() -> float | None:
    """The 1-minute load average (``None`` where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Adds ``stats`` (per variant: median/min/max in the result's unit) and ``ratios`` (per
    non-reference variant: median/min/max of the per-repeat ratios) to a worker's result."""
    samples: dict[str, list[float]] = result["samples"]
    reference = result["reference"]
    if reference not in samples:
        raise ValueError(
            f"summarize: {result.get('name')!r} has no samples for its reference "
            f"{reference!r} (variants: {sorted(samples)})."
        )
    scale = UNIT_SCALE[result["unit"].split("/")[0]]
    stats = {
        name: {
            "median": statistics.median(values) * scale,
            "min": min(values) * scale,
            "max": max(values) * scale,
            "n": len(values),
        }
        for name, values in samples.items()
    }
    ref = samples[reference]
    ratios = {}
    for name, values in samples.items():
        if name == reference:
            continue
        per_repeat = [v / r for v, r in zip(values, ref, strict=False) if r > 0]
        ratios[name] = {
            "median": statistics.median(per_repeat),
            "min": min(per_repeat),
            "max": max(per_repeat),
        }
    return {**result, "stats": stats, "ratios": ratios}


def machine_info(extra_versions: dict[str, str] | None = None) -> dict[str, Any]:
    """The machine and the versions the figures were taken with."""
    versions: dict[str, str] = {"python": platform.python_version()}
    for module in ("torch", "tensordict", "gymnasium", "numpy"):
        try:
            versions[module] = __import__(module).__version__
        except ImportError:
            continue
    versions.update(extra_versions or {})
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "versions": versions,
    }


def write_json(path: Path, machine: dict[str, Any], results: Sequence[dict[str, Any]]) -> Path:
    """Writes the run (machine, versions, every summarized workload) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": machine, "results": list(results)}, indent=1) + "\n")
    return path


def _ratio_cell(ratio: dict[str, float] | None) -> str:
    if ratio is None:
        return "-"
    return f"**{ratio['median']:.2f}x** ({ratio['min']:.2f}-{ratio['max']:.2f})"


def _time_cell(stat: dict[str, float], unit: str) -> str:
    return f"{stat['median']:.3g} {unit} ({stat['min']:.3g}-{stat['max']:.3g})"


def _load_cell(load: Iterable[float | None] | None) -> str:
    values = [f"{v:.2f}" for v in (load or ()) if v is not None]
    return " → ".join(values) if values else "-"


def markdown_table(
    machine: dict[str, Any], results: Sequence[dict[str, Any]], *, command: str = ""
) -> str:
    """The table published in ``benchmarks/README.md``: one row per workload and variant.

    Columns: the plain reference's time (median, min-max), then the ratios to it (median of the
    per-repeat ratios, min-max) of ours and, where a peer run was made, TorchRL's; the load
    average before and after the workload. The machine and versions head the table.
    """
    versions = ", ".join(f"{k} {v}" for k, v in machine.get("versions", {}).items())
    lines = [
        f"Machine: {machine.get('platform')}, {machine.get('processor')}, "
        f"{machine.get('cpus')} CPUs. Versions: {versions}.",
        "",
    ]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += [
        "| group | workload | variant | plain (median, min-max) | ours / plain | "
        "TorchRL / plain | load avg |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in results:
        unit = result["unit"]
        ref_stat = result["stats"][result["reference"]]
        peer = result.get("peer")
        peer_ratios = (peer or {}).get("ratios", {})
        load = list(result.get("load") or [])
        if peer:
            load += list(peer.get("load") or [])
        # Our variants, then TorchRL's that have no counterpart of ours (``import torchrl``);
        # a workload with no variant beside its reference (PPO without SB3) shows its time.
        rows = [(name, result["ratios"][name], peer_ratios.get(name)) for name in result["ratios"]]
        rows += [
            (name, None, ratio)
            for name, ratio in peer_ratios.items()
            if name not in result["ratios"]
        ]
        if not rows:
            rows = [(result["reference"], None, None)]
        for i, (name, ours, torchrl) in enumerate(rows):
            first = i == 0
            cells = [
                result["group"] if first else "",
                result["name"] if first else "",
                name,
                _time_cell(ref_stat, unit) if first else "",
                _ratio_cell(ours),
                _ratio_cell(torchrl),
                _load_cell(load) if first else "",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    notes = [r for r in results if r.get("notes")]
    if notes:
        lines.append("")
        lines += [f"- {r['name']}: {r['notes']}" for r in notes]
    return "\n".join(lines) + "\n"


def bar_charts(results: Sequence[dict[str, Any]], out_dir: Path) -> list[Path]:
    """One PNG per group: horizontal bars of each variant's ratio to the plain reference
    (median, with min-max whiskers), TorchRL's beside ours where a peer run was made."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    groups: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        groups.setdefault(result["group"], []).append(result)
    paths = []
    for group, rows in groups.items():
        labels, ours, ours_err, peer, peer_err = [], [], [], [], []
        for result in rows:
            peer_ratios = (result.get("peer") or {}).get("ratios", {})
            names = list(result["ratios"]) + [n for n in peer_ratios if n not in result["ratios"]]
            for name in names:
                ratio = result["ratios"].get(name)
                labels.append(f"{result['name']}\n{name}")
                ours.append(ratio["median"] if ratio else 0.0)
                ours_err.append(
                    (ratio["median"] - ratio["min"], ratio["max"] - ratio["median"])
                    if ratio
                    else (0.0, 0.0)
                )
                other = peer_ratios.get(name)
                peer.append(other["median"] if other else 0.0)
                peer_err.append(
                    (other["median"] - other["min"], other["max"] - other["median"])
                    if other
                    else (0.0, 0.0)
                )
        if not labels:
            continue
        height = 0.8 if not any(peer) else 0.4
        fig, ax = plt.subplots(figsize=(8, 0.6 + 0.55 * len(labels)))
        positions = list(range(len(labels)))
        ax.barh(
            [p + (height / 2 if any(peer) else 0) for p in positions],
            ours,
            height=height,
            xerr=list(zip(*ours_err, strict=True)),
            label="ours",
            color="tab:blue",
        )
        if any(peer):
            ax.barh(
                [p - height / 2 for p in positions],
                peer,
                height=height,
                xerr=list(zip(*peer_err, strict=True)),
                label="TorchRL",
                color="tab:orange",
            )
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_yticks(positions, labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("time / plain reference (median of repeats; 1.0 = plain)")
        ax.set_title(f"{group}: ratio to the plain loop, same process")
        ax.legend(loc="lower right", fontsize=7)
        fig.tight_layout()
        path = out_dir / f"{group}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths
