"""AtariDQNExperienceReplay: Dopamine's gzipped numpy checkpoints (written here) as TED rows."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
import torch

from rl_buffers import SliceSampler
from rl_buffers.datasets import AtariDQNExperienceReplay


def write_checkpoint(folder, number, frames, terminal_at=()):
    """``frames`` steps; frame t of checkpoint c is filled with 10 c + t; reward t."""
    folder.mkdir(parents=True, exist_ok=True)
    t = np.arange(frames)
    arrays = {
        "observation": (10 * number + t).astype(np.uint8)[:, None, None]
        * np.ones((1, 4, 4), np.uint8),
        "action": t.astype(np.int32) % 3,
        "reward": t.astype(np.float32),
        "terminal": np.isin(t, terminal_at).astype(np.uint8),
    }
    for key, value in arrays.items():
        with gzip.open(folder / f"$store$_{key}_ckpt.{number}.gz", "wb") as handle:
            np.save(handle, value)


def test_checkpoints_become_ted_rows(tmp_path):
    logs = tmp_path / "Pong" / "1" / "replay_logs"
    write_checkpoint(logs, 0, 5, terminal_at=(1,))
    write_checkpoint(logs, 1, 4)
    data = AtariDQNExperienceReplay("Pong/1", batch_size=4, root=tmp_path, download=False)
    rows = data[:]
    assert len(data) == 4 + 3  # each checkpoint's last row dropped
    assert rows["observation"][:, 0, 0].tolist() == [0, 1, 2, 3, 10, 11, 12]
    assert rows["next", "observation"][:, 0, 0].tolist() == [1, 0, 3, 4, 11, 12, 13]
    assert rows["next", "terminated"].tolist() == [False, True, False, False, False, False, False]
    assert rows["next", "done"].shape == (7,)
    assert rows["next", "reward"].tolist() == [0, 1, 2, 3, 0, 1, 2]
    assert rows["action"].dtype == torch.int32
    assert rows["episode"].tolist() == [0, 0, 1, 1, 2, 2, 2]
    assert data.metadata == {"checkpoints": [0, 1], "steps": 7, "episodes": 3}
    sliced = AtariDQNExperienceReplay(
        "Pong/1", batch_size=6, root=tmp_path, sampler=SliceSampler(slice_len=2, traj_key="episode")
    )
    torch.manual_seed(0)
    batch = sliced.sample().reshape(-1, 2)
    assert (batch["episode"][:, 0] == batch["episode"][:, 1]).all()


def test_download_and_bad_files(http_server, tmp_path):
    write_checkpoint(http_server.folder / "Pong" / "2" / "replay_logs", 0, 3)
    base, log = http_server()
    root = tmp_path / "root"
    data = AtariDQNExperienceReplay("Pong/2", root=root, url=base, checkpoints=[0])
    assert len(data) == 2
    assert (
        sum("%24store%24_observation_ckpt.0.gz" in line for line in log.read_text().splitlines())
        == 1
    )
    with pytest.raises(ValueError, match="expected dataset_id to be '<Game>/<run>'"):
        AtariDQNExperienceReplay("Pong", root=root)
    with pytest.raises(
        FileNotFoundError,
        match=r"Breakout/1/replay_logs/\$store\$_observation_ckpt\.0\.gz does not exist",
    ):
        AtariDQNExperienceReplay("Breakout/1", root=root, download=False, checkpoints=[0])
    logs = root / "Qbert" / "1" / "replay_logs"
    write_checkpoint(logs, 0, 3)
    (logs / "$store$_reward_ckpt.0.gz").write_bytes(b"\x1f\x8b truncated")
    with pytest.raises(ValueError, match=r"reward_ckpt\.0\.gz is not a gzipped numpy array"):
        AtariDQNExperienceReplay("Qbert/1", root=root, download=False)
    assert sorted(p.name for p in (root / "Qbert" / "1").iterdir()) == ["replay_logs"]
