import pytest
import torch

from rl_objectives.trainers import Checkpoint, CheckpointBest, CheckpointError, CheckpointRotation


def names(paths):
    return [p.name for p in paths]


def test_rotation_keeps_the_newest_and_the_best(tmp_path):
    net = torch.nn.Linear(1, 1)
    rotation = CheckpointRotation(tmp_path, keep_last=2, keep_best=("reward", "max"))
    for step, reward in [(1, 5.0), (2, 9.0), (3, 1.0), (4, 2.0), (5, 3.0)]:
        rotation.save(Checkpoint(net=net), step, metadata={"reward": reward})
    assert names(rotation.checkpoints()) == [
        "checkpoint_000000000002",  # the best (9.0)
        "checkpoint_000000000004",
        "checkpoint_000000000005",
    ]
    assert rotation.best().name == "checkpoint_000000000002"
    assert rotation.latest().name == "checkpoint_000000000005"
    assert rotation.load_latest(Checkpoint(net=net)) == {"reward": 3.0, "step": 5}


def test_rotation_ignores_incomplete_and_refuses_a_damaged_latest(tmp_path):
    net = torch.nn.Linear(1, 1)
    rotation = CheckpointRotation(tmp_path, keep_last=3)
    rotation.save(Checkpoint(net=net), 1)
    (tmp_path / "checkpoint_000000000009").mkdir()  # a save killed before its manifest
    assert rotation.latest().name == "checkpoint_000000000001"
    latest = rotation.save(Checkpoint(net=net), 2)
    (latest / "net.pt").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=r"checkpoint_000000000002/net\.pt is damaged"):
        rotation.load_latest(Checkpoint(net=net))


def test_best_k_keeps_the_k_best_and_skips_worse(tmp_path):
    net = torch.nn.Linear(1, 1)
    best = CheckpointBest(tmp_path, metric="loss", mode="min", keep=2)
    saved = [best.save(Checkpoint(net=net), step, loss) for step, loss in
             [(1, 3.0), (2, 1.0), (3, 2.0), (4, 5.0), (5, 0.5)]]  # fmt: skip
    assert saved[3] is None  # 5.0 is worse than the two kept (1.0, 2.0)
    assert names(best.checkpoints()) == ["best_000000000005", "best_000000000002"]
    assert best.best().name == "best_000000000005"


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="keep_last must be a positive int, got 0"):
        CheckpointRotation(tmp_path, keep_last=0)
    with pytest.raises(ValueError, match="mode must be 'min' or 'max', got 'up'"):
        CheckpointRotation(tmp_path, keep_last=1, keep_best=("r", "up"))
    with pytest.raises(ValueError, match="prefix must be letters"):
        CheckpointBest(tmp_path, metric="r", prefix="a/b")
    with pytest.raises(ValueError, match="loss must be finite"):
        CheckpointBest(tmp_path, metric="loss").save(
            Checkpoint(net=torch.nn.Linear(1, 1)), 1, float("nan")
        )


def test_a_save_removes_what_a_killed_writer_left_and_keeps_a_live_ones(tmp_path):
    import subprocess
    import sys

    # A real process that has exited: its pid names a writer that died mid-save.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    net = torch.nn.Linear(1, 1)
    rotation = CheckpointRotation(tmp_path, keep_last=2)
    rotation.save(Checkpoint(net=net), 1)
    stale = tmp_path / f".checkpoint_000000000002.partial-{dead.pid}"
    stale.mkdir()
    (stale / "manifest.json").write_text("{}")
    live = tmp_path / f".checkpoint_000000000003.partial-{__import__('os').getppid()}"
    live.mkdir()
    rotation.save(Checkpoint(net=net), 4)
    assert not stale.exists()
    assert live.exists()  # a live process may still be writing it
    best = CheckpointBest(tmp_path / "best", metric="reward", keep=1)
    stale_best = tmp_path / "best" / f".best_000000000001.partial-{dead.pid}"
    stale_best.mkdir(parents=True)
    best.save(Checkpoint(net=net), 2, 1.0)
    assert not stale_best.exists()
