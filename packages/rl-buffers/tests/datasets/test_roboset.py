"""RobosetExperienceReplay: RoboSet's trial layout (written here with h5py) as TED rows."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from rl_buffers import SliceSampler
from rl_buffers.datasets import RobosetExperienceReplay

h5py = pytest.importorskip("h5py", reason='pip install "rl-buffers[h5py]"')


def write_roboset(path, lengths=(3, 2), *, done_last=(True, False)):
    """Trials of the given lengths; observation of step s of trial k is [100 k + s, 1]."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as handle:
        for k, (n, ends) in enumerate(zip(lengths, done_last, strict=True)):
            trial = handle.create_group(f"Trial{k}")
            s = np.arange(n, dtype=np.float32)
            trial["observations"] = np.stack([100 * k + s, np.ones(n, np.float32)], axis=1)
            trial["actions"] = (s * 2).reshape(n, 1)
            trial["rewards"] = s + 0.5
            done = np.zeros(n, bool)
            done[-1] = ends
            trial["done"] = done
            trial["env_infos/time"] = s / 10
            trial["env_infos/label"] = np.bytes_(b"x")  # non-numeric: left out


def test_trials_become_ted_rows(tmp_path):
    write_roboset(tmp_path / "FK1-v4(expert)/toy.h5")
    data = RobosetExperienceReplay(
        "FK1-v4(expert)/toy", batch_size=2, root=tmp_path, download=False
    )
    rows = data[:]
    assert len(data) == 5
    assert rows["observation"][:, 0].tolist() == [0, 1, 2, 100, 101]
    assert rows["episode"].tolist() == [0, 0, 0, 1, 1]
    nxt = rows["next"]
    assert nxt["observation"][:, 0].tolist() == [1, 2, 0, 101, 0]
    assert nxt["info", "time"].tolist() == pytest.approx([0.1, 0.2, 0, 0.1, 0])
    assert nxt["reward"].squeeze(-1).tolist() == [0.5, 1.5, 2.5, 0.5, 1.5]
    assert nxt["done"].squeeze(-1).tolist() == [0, 0, 1, 0, 1]
    assert nxt["terminated"].squeeze(-1).tolist() == [0, 0, 1, 0, 0]
    assert nxt["truncated"].squeeze(-1).tolist() == [0, 0, 0, 0, 1]
    assert not rows["done"].any()
    assert ("info", "label") not in rows.keys(include_nested=True)
    assert data.metadata == {"episodes": 2, "source": "toy.h5"}
    sampler_data = RobosetExperienceReplay(
        "FK1-v4(expert)/toy",
        batch_size=8,
        root=tmp_path,
        sampler=SliceSampler(slice_len=2, traj_key="episode"),
    )
    torch.manual_seed(0)
    batch = sampler_data.sample().reshape(-1, 2)
    assert (batch["episode"][:, 0] == batch["episode"][:, 1]).all()


def test_download_and_bad_input(http_server, tmp_path):
    write_roboset(http_server.folder / "toy.h5")
    digest = hashlib.sha256((http_server.folder / "toy.h5").read_bytes()).hexdigest()
    base, _ = http_server()
    root = tmp_path / "root"
    data = RobosetExperienceReplay("toy", root=root, url=f"{base}/toy.h5", sha256=digest)
    assert len(data) == 5
    with pytest.raises(FileNotFoundError, match=r"other\.h5 does not exist and there is no url="):
        RobosetExperienceReplay("other", root=root)
    with h5py.File(root / "flat.h5", "w") as handle:
        handle["observations"] = np.zeros((3, 2))
    with pytest.raises(ValueError, match=r"flat\.h5 holds no RoboSet trial"):
        RobosetExperienceReplay("flat", root=root)
    (root / "junk.h5").write_bytes(b"\x89HDF junk")
    with pytest.raises(ValueError, match=r"junk\.h5 is not a readable HDF5 file"):
        RobosetExperienceReplay("junk", root=root)
    assert sorted(p.name for p in root.iterdir()) == ["flat.h5", "junk.h5", "toy", "toy.h5"]
