"""benchmarks/run.py's writer: the statistics, the JSON, the markdown table and the charts.

The suite's timings are not tested (they depend on the machine); what it writes from them is:
the figures below are computed by hand from the samples.
"""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _load(name: str, path: Path):
    module_name = f"benchmarks_suite_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


@pytest.fixture(scope="module")
def report():
    return _load("report", ROOT / "benchmarks" / "suite" / "report.py")


def _result(group="envs", name="8 CartPoles", peer=False):
    # seconds per step: plain 10, 12, 20 us; ours 15, 12, 30 us -> per-repeat ratios 1.5, 1.0, 1.5
    result = {
        "group": group,
        "name": name,
        "unit": "us/step",
        "clock": "cpu",
        "reference": "plain",
        "samples": {"plain": [10e-6, 12e-6, 20e-6], "SerialEnv(8)": [15e-6, 12e-6, 30e-6]},
        "load": [0.5, 0.75],
        "notes": "plain: SyncVectorEnv(8).",
    }
    if peer:
        result["peer"] = {
            **result,
            "samples": {"plain": [10e-6, 10e-6, 10e-6], "SerialEnv(8)": [200e-6, 190e-6, 210e-6]},
            "load": [1.0, 1.25],
        }
    return result


def test_summarize_medians_and_per_repeat_ratios(report):
    summary = report.summarize(_result())
    assert summary["stats"]["plain"] == pytest.approx(
        {"median": 12.0, "min": 10.0, "max": 20.0, "n": 3}
    )
    assert summary["stats"]["SerialEnv(8)"]["median"] == pytest.approx(15.0)
    assert summary["ratios"]["SerialEnv(8)"] == pytest.approx(
        {"median": 1.5, "min": 1.0, "max": 1.5}
    )
    assert "plain" not in summary["ratios"]


def test_summarize_needs_the_reference(report):
    result = _result()
    result["reference"] = "gymnasium"
    with pytest.raises(ValueError, match=r"no samples for its reference 'gymnasium'"):
        report.summarize(result)


def test_measure_alternates_and_rotates(report):
    calls = []
    variants = {name: (lambda name=name: calls.append(name) or 1.0) for name in "abc"}
    samples = report.measure(variants, 3, warmup=0)
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert samples == {"a": [1.0] * 3, "b": [1.0] * 3, "c": [1.0] * 3}
    with pytest.raises(ValueError, match="expected repeats >= 1, got 0"):
        report.measure(variants, 0)


def test_json_table_and_charts(report, tmp_path):
    summary = report.summarize(_result(peer=True))
    summary["peer"] = report.summarize(summary["peer"])
    machine = {"platform": "Linux-x", "processor": "x86_64", "cpus": 2,
               "versions": {"torch": "2.13.0", "peer torchrl": "0.14.1"}}  # fmt: skip
    path = report.write_json(tmp_path / "out" / "results.json", machine, [summary])
    written = json.loads(path.read_text())
    assert written["machine"]["versions"]["peer torchrl"] == "0.14.1"
    assert written["results"][0]["ratios"]["SerialEnv(8)"]["median"] == pytest.approx(1.5)

    table = report.markdown_table(machine, [summary], command="uv run python benchmarks/run.py")
    assert "Versions: torch 2.13.0, peer torchrl 0.14.1." in table
    assert "Command: `uv run python benchmarks/run.py`" in table
    row = next(line for line in table.splitlines() if "SerialEnv(8)" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells == [
        "envs", "8 CartPoles", "SerialEnv(8)", "12 us/step (10-20)",
        "**1.50x** (1.00-1.50)", "**20.00x** (19.00-21.00)", "0.50 → 0.75 → 1.00 → 1.25",
    ]  # fmt: skip
    assert "- 8 CartPoles: plain: SyncVectorEnv(8)." in table

    charts = report.bar_charts([summary], tmp_path / "charts")
    assert [p.name for p in charts] == ["envs.png"]
    assert charts[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_row_without_ratios(report):
    # A workload with only its reference (the PPO wall time without SB3) still gets a row.
    result = _result(group="ppo", name="PPO to 475")
    result["samples"] = {"plain": result["samples"]["plain"]}
    table = report.markdown_table({"versions": {}}, [report.summarize(result)])
    row = next(line for line in table.splitlines() if "PPO to 475" in line)
    assert "12 us/step (10-20)" in row


def test_run_rejects_unknown_groups(capsys):
    run = _load("run", ROOT / "benchmarks" / "run.py")
    with pytest.raises(SystemExit):
        run.parse(["--only", "envs,gpus"])
    assert "expected groups among envs, collectors" in capsys.readouterr().err
    args = run.parse(["--only", "values", "--quick"])
    assert args.groups == ["values"]
    assert args.out == ROOT / "benchmarks" / "results" / "quick"


@pytest.mark.parametrize("script", ["bench_ppo_vs_sb3", "bench_ppo_cleanrl_parity"])
def test_the_ppo_harnesses_load_examples_ppo(script, monkeypatch):
    # examples/ppo.py imports its neighbour _recipe: the harnesses (and the suite's ppo group,
    # which loads bench_ppo_vs_sb3) put examples/ on sys.path; they raised ModuleNotFoundError.
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "_recipe", raising=False)
    bench = _load(script, ROOT / "benchmarks" / "examples" / f"{script}.py")
    try:
        ppo = bench.load_ppo_example()
        assert ppo.parse_config(["--seed", "2", "--no-plot"]).seed == 2
    finally:
        sys.modules.pop("example_ppo", None)
        sys.modules.pop("_recipe", None)
