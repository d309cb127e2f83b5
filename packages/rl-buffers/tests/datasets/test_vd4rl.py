"""VD4RLExperienceReplay: DreamerV2-layout episodes (written here with numpy.savez) as TED
rows, downloaded from a local HTTP server standing in for the hub."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest
import torch

from rl_buffers import SliceSampler
from rl_buffers.datasets import VD4RLExperienceReplay, load_dataset

DATASET = "main/walker_walk/random/64px"


def write_episode(path, steps, *, start, terminal=False):
    """``steps`` steps; step s has pixels filled with start + s, action [start + s] (the
    action that led to it), reward (start + s) / 10, height start + s; step 0 is padding."""
    s = np.arange(steps)
    value = (start + s).astype(np.uint8)
    is_terminal = np.zeros(steps, bool)
    is_terminal[-1] = terminal
    np.savez(
        path,
        image=value[:, None, None, None] * np.ones((1, 4, 4, 3), np.uint8),
        action=(start + s).astype(np.float32)[:, None],
        reward=((start + s) / 10).astype(np.float32),
        discount=(~is_terminal).astype(np.float32),
        is_first=s == 0,
        is_last=s == steps - 1,
        is_terminal=is_terminal,
        height=(start + s).astype(np.float32),
    )


def write_source(folder):
    folder.mkdir(parents=True, exist_ok=True)
    write_episode(folder / "0-ep.npz", 4, start=10, terminal=True)
    write_episode(folder / "1-ep.npz", 3, start=20)


def test_episodes_become_ted_rows(tmp_path):
    write_source(tmp_path / "source" / DATASET)
    data = VD4RLExperienceReplay(DATASET, batch_size=2, root=tmp_path, download=False)
    rows = data[:]
    assert len(data) == 3 + 2
    # row t: pixels of step t, then the action and reward that led to step t + 1
    assert rows["pixels"][:, 0, 0, 0].tolist() == [10, 11, 12, 20, 21]
    assert rows["next", "pixels"][:, 0, 0, 0].tolist() == [11, 12, 13, 21, 22]
    assert rows["pixels"].shape == (5, 4, 4, 3)
    assert rows["action"].squeeze(-1).tolist() == [11, 12, 13, 21, 22]
    torch.testing.assert_close(
        rows["next", "reward"], torch.tensor([[1.1], [1.2], [1.3], [2.1], [2.2]])
    )
    assert rows["next", "done"].squeeze(-1).tolist() == [0, 0, 1, 0, 1]
    assert rows["next", "terminated"].squeeze(-1).tolist() == [0, 0, 1, 0, 0]
    assert rows["next", "truncated"].squeeze(-1).tolist() == [0, 0, 0, 0, 1]
    assert rows["is_init"].tolist() == [1, 0, 0, 1, 0]
    assert rows["discount"].squeeze(-1).tolist() == [1, 1, 0, 1, 1]
    assert rows["state", "height"].tolist() == [10, 11, 12, 20, 21]
    assert rows["next", "state", "height"].tolist() == [11, 12, 13, 21, 22]
    assert rows["episode"].tolist() == [0, 0, 0, 1, 1]
    assert not rows["done"].any()
    sliced = VD4RLExperienceReplay(
        DATASET,
        batch_size=4,
        root=tmp_path,
        sampler=SliceSampler(slice_len=2, end_key=("next", "done")),
    )
    torch.manual_seed(0)
    batch = sliced.sample().reshape(-1, 2)
    assert (batch["episode"][:, 0] == batch["episode"][:, 1]).all()


def test_download_from_the_hub_layout(http_server, tmp_path):
    hub = http_server.folder
    files = hub / "datasets" / "conglu" / "vd4rl" / "resolve" / "main" / "vd4rl" / DATASET
    write_source(files)
    listing = hub / "api" / "datasets" / "conglu" / "vd4rl" / "tree" / "main" / "vd4rl" / DATASET
    listing.parent.mkdir(parents=True)
    entries = [
        {"type": "file", "path": f"vd4rl/{DATASET}/{name}"} for name in ("0-ep.npz", "1-ep.npz")
    ]
    listing.write_text(json.dumps([*entries, {"type": "directory", "path": "vd4rl/x"}]))
    base, log = http_server()
    data = load_dataset(f"vd4rl:{DATASET}", root=tmp_path / "root", endpoint=base)
    assert len(data) == 5
    assert data.metadata["files"] == ["0-ep.npz", "1-ep.npz"]
    assert len(log.read_text().splitlines()) == 3
    with pytest.raises(FileNotFoundError, match=r"unknown dataset_id 'main/none/random/64px'"):
        VD4RLExperienceReplay("main/none/random/64px", root=tmp_path / "root", endpoint=base)


def test_bad_input_names_the_file_and_leaves_nothing(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    absent = tmp_path / "absent"
    with pytest.raises(ConnectionError, match=rf"cannot reach http://127\.0\.0\.1:{port}/api"):
        VD4RLExperienceReplay(DATASET, root=absent, endpoint=f"http://127.0.0.1:{port}")
    assert not absent.exists()
    with pytest.raises(FileNotFoundError, match=r"64px holds no \.npz episode and download=False"):
        VD4RLExperienceReplay(DATASET, root=absent, download=False)
    assert not absent.exists()
    source = tmp_path / "source" / DATASET
    write_source(source)
    cut = (source / "1-ep.npz").read_bytes()
    (source / "1-ep.npz").write_bytes(cut[: len(cut) // 2])
    with pytest.raises(ValueError, match=r"1-ep\.npz is not a readable numpy \.npz archive"):
        VD4RLExperienceReplay(DATASET, root=tmp_path, download=False)
    np.savez(source / "1-ep.npz", pixels=np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"1-ep\.npz is not in V-D4RL's layout"):
        VD4RLExperienceReplay(DATASET, root=tmp_path, download=False)
    assert not (tmp_path / DATASET).exists()
    assert sorted(p.name for p in source.iterdir()) == ["0-ep.npz", "1-ep.npz"]
    with pytest.raises(ValueError, match=r"expected dataset_id to be a V-D4RL folder"):
        VD4RLExperienceReplay("../up", root=tmp_path)
