"""A run SIGKILLed mid-training and resumed from its last checkpoint ends with the same
parameters as an uninterrupted run: bitwise on CPU (one thread; the same draws in the same
order: model, optimizer, LR scheduler, replay buffer through its storage checkpointer,
collector, target updater and RNG states all come back)."""

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).with_name("_resume_run.py")


def run_here(run_dir):
    """The uninterrupted run, in this process (one thread, as in the children)."""
    spec = importlib.util.spec_from_file_location("_resume_run", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trainer, loss, _ = script.build(run_dir)
        trainer.train()
    finally:
        torch.set_num_threads(threads)
    return {k: v.detach().clone() for k, v in loss.state_dict().items()}


def run(run_dir, *args, **popen):
    return subprocess.Popen([sys.executable, str(SCRIPT), str(run_dir), *args], **popen)


def checkpoints(run_dir):
    folder = run_dir / "checkpoints"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / "manifest.json").is_file())


@pytest.mark.slow  # two training runs in subprocesses, one SIGKILLed and resumed: about 2 min
def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path):
    straight_dir, killed_dir = tmp_path / "straight", tmp_path / "killed"
    victim = run(killed_dir, "--pause", "0.25")
    try:
        expected = run_here(straight_dir)  # while the child imports
        deadline = time.monotonic() + 120
        # Kill once two checkpoints exist (128 frames of 640): mid-run, after a rotation.
        while len(checkpoints(killed_dir)) < 2:
            assert victim.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no checkpoint after 120 s"
            time.sleep(0.05)
        os.kill(victim.pid, signal.SIGKILL)
        assert victim.wait(timeout=30) == -signal.SIGKILL
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    assert not (killed_dir / "final.pt").exists()
    resumed = run(killed_dir, "--resume")
    assert resumed.wait(timeout=120) == 0
    got = torch.load(killed_dir / "final.pt")
    assert expected.keys() == got.keys()
    for key in expected:
        assert torch.equal(expected[key], got[key]), key
    # The rotation kept the newest two, the final one (640 frames) among them.
    assert checkpoints(killed_dir)[-1] == "checkpoint_000000000640"
    assert len(checkpoints(killed_dir)) == 2
