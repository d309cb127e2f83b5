"""The examples run end to end (the README's main job among them)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_smoke_example_runs_the_stack():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "smoke.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("rl_core")
    assert any(line.startswith("rollout        (8, 200) transitions") for line in lines)
    assert any(line.startswith("GAE            advantage (8, 200, 1)") for line in lines)
