"""LeRobotExperienceReplay: a LeRobot snapshot (parquet written here with pyarrow)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from rl_buffers import SliceSampler
from rl_buffers.datasets import LeRobotExperienceReplay, lerobot_columns_to_tensordict

pa = pytest.importorskip("pyarrow", reason='pip install "rl-buffers[lerobot]"')
pq = pytest.importorskip("pyarrow.parquet", reason='pip install "rl-buffers[lerobot]"')


def write_snapshot(folder, episodes=((0, 3), (1, 2))):
    """Episode e of length n: state of frame f is [10 e + f, 0], action [f]."""
    (folder / "meta").mkdir(parents=True)
    info = {
        "codebase_version": "v2.1",
        "fps": 10,
        "features": {
            "observation.state": {"dtype": "float32", "shape": [2]},
            "observation.images.top": {"dtype": "video", "shape": [3, 8, 8]},
            "action": {"dtype": "float32", "shape": [1]},
        },
    }
    (folder / "meta" / "info.json").write_text(json.dumps(info))
    (folder / "meta" / "tasks.jsonl").write_text('{"task_index": 0, "task": "push the T"}\n')
    for episode, n in episodes:
        f = np.arange(n)
        table = pa.table(
            {
                "observation.state": [[float(10 * episode + i), 0.0] for i in f],
                "action": [[float(i)] for i in f],
                "episode_index": np.full(n, episode, np.int64),
                "frame_index": f.astype(np.int64),
                "timestamp": (f / 10).astype(np.float32),
                "next.reward": f.astype(np.float32),
                "task_index": np.zeros(n, np.int64),
            }
        )
        path = folder / "data" / "chunk-000" / f"episode_{episode:06d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)


def test_snapshot_frames_become_rows(tmp_path):
    write_snapshot(tmp_path / "lerobot" / "toy")
    data = LeRobotExperienceReplay(
        "lerobot/toy", root=tmp_path, batch_size=4, download=False, decode_video=False
    )
    rows = data[:]
    assert len(data) == 5
    assert rows["observation", "state"][:, 0].tolist() == [0, 1, 2, 10, 11]
    assert rows["action"].shape == (5, 1)
    assert rows["episode"].tolist() == [0, 0, 0, 1, 1]
    assert rows["frame"].tolist() == [0, 1, 2, 0, 1]
    assert rows["next", "reward"].shape == (5, 1)
    assert rows["next", "done"].squeeze(-1).tolist() == [0, 0, 1, 0, 1]
    assert data.metadata["video_keys"] == ["observation.images.top"]
    assert data.metadata["tasks"] == {"0": "push the T"}
    sliced = LeRobotExperienceReplay(
        "lerobot/toy",
        root=tmp_path,
        batch_size=4,
        download=False,
        decode_video=False,
        sampler=SliceSampler(slice_len=2, traj_key="episode"),
    )
    torch.manual_seed(0)
    batch = sliced.sample().reshape(-1, 2)
    assert (batch["episode"][:, 0] == batch["episode"][:, 1]).all()


def test_columns_helper_and_bad_input(tmp_path):
    with pytest.raises(ValueError, match=r"expected every column to have 2 rows.*\{'action': 3\}"):
        lerobot_columns_to_tensordict({"episode_index": torch.zeros(2), "action": torch.zeros(3)})
    td = lerobot_columns_to_tensordict({"observation.images.top": torch.zeros(2, 3, 4, 4)})
    assert td["observation", "image", "top"].shape == (2, 3, 4, 4)
    with pytest.raises(FileNotFoundError, match=r"lerobot/absent/meta/info\.json does not exist"):
        LeRobotExperienceReplay("lerobot/absent", root=tmp_path, download=False)
    assert list(tmp_path.iterdir()) == []
    write_snapshot(tmp_path / "lerobot" / "bad")
    bad = tmp_path / "lerobot" / "bad" / "data" / "chunk-000" / "episode_000001.parquet"
    bad.write_bytes(bad.read_bytes()[:40])
    with pytest.raises(ValueError, match=r"episode_000001\.parquet is not a readable parquet file"):
        LeRobotExperienceReplay("lerobot/bad", root=tmp_path, download=False, decode_video=False)
    assert not (tmp_path / "lerobot" / "bad" / "memmap").exists()
