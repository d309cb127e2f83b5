"""Fixtures of the dataset tests: a hand-written TED rollout."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict


@pytest.fixture
def episodes() -> TensorDict:
    """Episodes of 3 and 2 steps (the second truncated): observations 10, 11, 12 -> 13
    (terminal), then a reset to 20, 21 -> 22 (truncated); a nested entry rides along."""
    obs = torch.tensor([10.0, 11.0, 12.0, 20.0, 21.0]).unsqueeze(-1)
    next_obs = torch.tensor([11.0, 12.0, 13.0, 21.0, 22.0]).unsqueeze(-1)
    terminated = torch.tensor([False, False, True, False, False]).unsqueeze(-1)
    truncated = torch.tensor([False, False, False, False, True]).unsqueeze(-1)
    false = torch.zeros(5, 1, dtype=torch.bool)
    return TensorDict(
        {
            "observation": obs,
            "pixels": {"a": obs.expand(5, 3).clone().to(torch.uint8)},
            "action": torch.arange(5).unsqueeze(-1),
            "done": false,
            "terminated": false.clone(),
            "truncated": false.clone(),
            "next": {
                "observation": next_obs,
                "pixels": {"a": next_obs.expand(5, 3).clone().to(torch.uint8)},
                "reward": torch.arange(5.0).unsqueeze(-1) / 10,
                "done": terminated | truncated,
                "terminated": terminated,
                "truncated": truncated,
            },
        },
        [5],
    )


@pytest.fixture
def http_server(tmp_path):
    """A local HTTP server process (``_http_server.py``) serving ``tmp_path / "served"``;
    yields ``start(rate=0) -> (base_url, log_file)``. Each server is killed at teardown."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    served = tmp_path / "served"
    served.mkdir()
    script = Path(__file__).with_name("_http_server.py")
    processes = []

    def start(rate: int = 0) -> tuple[str, Path]:
        n = len(processes)
        port_file, log = tmp_path / f"port{n}", tmp_path / f"log{n}"
        log.touch()
        process = subprocess.Popen(
            [sys.executable, str(script), str(served), str(port_file), str(log), str(rate)]
        )
        processes.append(process)
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the test HTTP server did not start")
            time.sleep(0.02)
        return f"http://127.0.0.1:{port_file.read_text()}", log

    start.folder = served
    yield start
    for process in processes:
        process.kill()
        process.wait()
