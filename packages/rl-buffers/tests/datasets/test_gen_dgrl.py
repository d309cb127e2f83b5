"""GenDGRLExperienceReplay: a Gen-DGRL archive (a tar.xz of numpy trajectories, written here
with tarfile and numpy) as TED rows."""

from __future__ import annotations

import hashlib
import io
import tarfile

import numpy as np
import pytest
import torch

from rl_buffers import SliceSampler
from rl_buffers.datasets import GenDGRLExperienceReplay


def trajectory(steps, start, done_last=True):
    """Observation s is filled with start + s; action s; reward s / 2; done at the end."""
    s = np.arange(steps + 1)
    dones = np.zeros(steps, bool)
    dones[-1] = done_last
    return {
        "observations": (start + s).astype(np.uint8)[:, None, None, None]
        * np.ones((1, 3, 3, 3), np.uint8),
        "actions": np.arange(steps, dtype=np.int64),
        "rewards": (np.arange(steps) / 2).astype(np.float32),
        "dones": dones,
    }


def write_archive(path, trajectories):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:xz") as archive:
        for name, value in trajectories.items():
            buffer = io.BytesIO()
            np.save(buffer, np.array(value, dtype=object), allow_pickle=True)
            info = tarfile.TarInfo(f"bigfish/{name}.npy")
            info.size = buffer.tell()
            buffer.seek(0)
            archive.addfile(info, buffer)


TRAJECTORIES = {"a": trajectory(3, 10), "b": trajectory(2, 20, done_last=False)}


def test_trajectories_become_ted_rows(tmp_path):
    write_archive(tmp_path / "bigfish-1M_E.tar.xz", TRAJECTORIES)
    data = GenDGRLExperienceReplay("bigfish-1M_E", batch_size=2, root=tmp_path, download=False)
    rows = data[:]
    assert len(data) == 5
    assert rows["observation"][:, 0, 0, 0].tolist() == [10, 11, 12, 20, 21]
    assert rows["next", "observation"][:, 0, 0, 0].tolist() == [11, 12, 13, 21, 22]
    assert rows["observation"].dtype == torch.uint8
    assert rows["action"].tolist() == [0, 1, 2, 0, 1]
    assert rows["next", "reward"].tolist() == [0, 0.5, 1.0, 0, 0.5]
    assert rows["next", "done"].squeeze(-1).tolist() == [0, 0, 1, 0, 0]
    assert rows["next", "terminated"].squeeze(-1).tolist() == [0, 0, 1, 0, 0]
    assert rows["episode"].tolist() == [0, 0, 0, 1, 1]
    sliced = GenDGRLExperienceReplay(
        "bigfish-1M_E",
        batch_size=4,
        root=tmp_path,
        sampler=SliceSampler(slice_len=2, traj_key="episode"),
    )
    torch.manual_seed(0)
    batch = sliced.sample().reshape(-1, 2)
    assert (batch["episode"][:, 0] == batch["episode"][:, 1]).all()


def test_download_and_bad_input(http_server, tmp_path):
    write_archive(http_server.folder / "bigfish.tar.xz", TRAJECTORIES)
    digest = hashlib.sha256((http_server.folder / "bigfish.tar.xz").read_bytes()).hexdigest()
    base, _ = http_server()
    root = tmp_path / "root"
    data = GenDGRLExperienceReplay(
        "bigfish-level_1_E", root=root, url=f"{base}/bigfish.tar.xz", sha256=digest
    )
    assert len(data) == 5
    with pytest.raises(ValueError, match=r"unknown dataset_id 'bigfish-2M'.*'level_40_S'"):
        GenDGRLExperienceReplay("bigfish-2M", root=root)
    absent = tmp_path / "absent"
    with pytest.raises(FileNotFoundError, match=r"absent/coinrun-1M_S\.tar\.xz does not exist"):
        GenDGRLExperienceReplay("coinrun-1M_S", root=absent, download=False)
    assert not absent.exists()
    whole = (http_server.folder / "bigfish.tar.xz").read_bytes()
    (root / "coinrun-1M_S.tar.xz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"coinrun-1M_S\.tar\.xz is not a readable tar of numpy"):
        GenDGRLExperienceReplay("coinrun-1M_S", root=root, download=False)
    (root / "maze-1M_S.tar.xz").write_text("observations,actions\n")
    with pytest.raises(ValueError, match=r"maze-1M_S\.tar\.xz is not a readable tar of numpy"):
        GenDGRLExperienceReplay("maze-1M_S", root=root, download=False)
    write_archive(root / "heist-1M_S.tar.xz", {"c": {"observations": np.zeros((3, 2))}})
    with pytest.raises(ValueError, match=r"heist-1M_S\.tar\.xz:bigfish/c\.npy is not in Gen-DGRL"):
        GenDGRLExperienceReplay("heist-1M_S", root=root, download=False)
    assert sorted(p.name for p in root.iterdir()) == [
        "bigfish-level_1_E",
        "bigfish-level_1_E.tar.xz",
        "coinrun-1M_S.tar.xz",
        "heist-1M_S.tar.xz",
        "maze-1M_S.tar.xz",
    ]
