"""D4RLExperienceReplay: D4RL's HDF5 layout (written here with h5py) as TED rows."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch
from tensordict import MemoryMappedTensor

from rl_buffers import SliceSampler
from rl_buffers.datasets import D4RLExperienceReplay

h5py = pytest.importorskip("h5py", reason='pip install "rl-buffers[h5py]"')


def write_d4rl(path, *, next_observations=False, infos=False, drop=(), steps=None):
    """Two episodes in D4RL's layout: steps 0-2 end terminated, 3-6 end by timeout, and a
    7th row starting a third episode. Observation of row t is [t, 10 t]; reward t / 10."""
    n = steps or 8
    t = np.arange(n, dtype=np.float32)
    columns = {
        "observations": np.stack([t, 10 * t], axis=1),
        "actions": (t * 2).reshape(n, 1),
        "rewards": t / 10,
        "terminals": np.isin(np.arange(n), [2]),
        "timeouts": np.isin(np.arange(n), [6]),
    }
    if next_observations:
        columns["next_observations"] = columns["observations"] + 0.5
    with h5py.File(path, "w") as handle:
        for key, value in columns.items():
            if key not in drop:
                handle[key] = value
        if infos:
            handle["infos/qpos"] = np.arange(n, dtype=np.float64) * 100
        handle["metadata/algorithm"] = "SAC"
        handle["metadata"].attrs["policy"] = "expert"


def test_rows_follow_torchrl_ted_layout(tmp_path):
    write_d4rl(tmp_path / "toy-v0.hdf5", infos=True)
    data = D4RLExperienceReplay("toy-v0", batch_size=4, root=tmp_path, download=False)
    rows = data[:]
    assert len(data) == 7  # the last row's successor is unknown: dropped
    assert rows["observation"][:, 0].tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert rows["action"].squeeze(-1).tolist() == [0, 2, 4, 6, 8, 10, 12]
    nxt = rows["next"]
    # next observation: the following row's, zeroed where the episode ended (rows 2 and 6)
    assert nxt["observation"][:, 0].tolist() == [1, 2, 0, 4, 5, 6, 0]
    assert nxt["observation"][:, 1].tolist() == [10, 20, 0, 40, 50, 60, 0]
    assert nxt["reward"].squeeze(-1).tolist() == pytest.approx([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    assert nxt["terminated"].squeeze(-1).tolist() == [0, 0, 1, 0, 0, 0, 0]
    assert nxt["truncated"].squeeze(-1).tolist() == [0, 0, 0, 0, 0, 0, 1]
    assert nxt["done"].squeeze(-1).tolist() == [0, 0, 1, 0, 0, 0, 1]
    # the root flags and reward are the previous row's
    assert rows["done"].squeeze(-1).tolist() == [0, 0, 0, 1, 0, 0, 0]
    assert rows["reward"].squeeze(-1).tolist() == pytest.approx([0, 0, 0.1, 0.2, 0.3, 0.4, 0.5])
    assert rows["done"].dtype == torch.bool
    assert rows["done"].shape == (7, 1)
    assert rows["info", "qpos"].tolist() == [0, 100, 200, 300, 400, 500, 600]
    assert nxt["info", "qpos"].tolist() == [100, 200, 300, 400, 500, 600, 700]
    assert data.metadata == {"algorithm": "SAC", "policy": "expert"}


def test_rows_are_memory_mapped_and_reopened_without_the_source(tmp_path):
    write_d4rl(tmp_path / "toy-v0.hdf5")
    data = D4RLExperienceReplay("toy-v0", root=tmp_path, download=False)
    leaf = data.storage._data.get(("next", "observation"))
    assert isinstance(leaf, MemoryMappedTensor)
    assert leaf.filename.startswith(str(tmp_path / "toy-v0"))
    (tmp_path / "toy-v0.hdf5").unlink()
    again = D4RLExperienceReplay("toy-v0", root=tmp_path, download=False)
    assert (again[:] == data[:]).all()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy-v0"]


def test_next_observations_and_truncation_options(tmp_path):
    write_d4rl(tmp_path / "toy-v0.hdf5", next_observations=True)
    data = D4RLExperienceReplay(
        "toy-v0", root=tmp_path, download=False, use_truncated_as_done=False
    )
    nxt = data[:]["next"]
    assert nxt["observation"][:, 0].tolist() == [0.5, 1.5, 0, 3.5, 4.5, 5.5, 6.5]
    assert nxt["done"].squeeze(-1).tolist() == [0, 0, 1, 0, 0, 0, 0]


def test_a_slice_sampler_never_crosses_an_episode_end(tmp_path):
    write_d4rl(tmp_path / "toy-v0.hdf5", steps=8)
    data = D4RLExperienceReplay(
        "toy-v0",
        batch_size=20,
        root=tmp_path,
        download=False,
        sampler=SliceSampler(slice_len=2, end_key=("next", "done")),
    )
    torch.manual_seed(0)
    for _ in range(5):
        batch = data.sample().reshape(-1, 2)
        first, second = batch["observation"][:, :, 0].unbind(-1)
        assert (second == first + 1).all()  # consecutive steps
        assert not batch["next", "done"][:, 0].any()  # no slice steps over an end


def test_download_from_a_local_http_server(http_server, tmp_path):
    write_d4rl(http_server.folder / "toy.hdf5")
    digest = hashlib.sha256((http_server.folder / "toy.hdf5").read_bytes()).hexdigest()
    base, log = http_server()
    root = tmp_path / "root"
    data = D4RLExperienceReplay("toy-v0", root=root, url=f"{base}/toy.hdf5", sha256=digest)
    assert len(data) == 7
    assert sorted(p.name for p in root.iterdir()) == ["toy-v0", "toy-v0.hdf5"]
    D4RLExperienceReplay("toy-v0", root=root, url=f"{base}/toy.hdf5")  # converted: no request
    assert len(log.read_text().splitlines()) == 1


def test_writes_are_refused_naming_the_dataset(tmp_path):
    write_d4rl(tmp_path / "toy-v0.hdf5")
    data = D4RLExperienceReplay("toy-v0", root=tmp_path, download=False)
    with pytest.raises(RuntimeError, match=r"D4RLExperienceReplay\('toy-v0'\) is a read-only"):
        data.extend(data[:2])


# ---------------------------------------------------------------- bad input
def test_missing_root_names_the_file_and_creates_nothing(tmp_path):
    root = tmp_path / "absent"
    with pytest.raises(FileNotFoundError, match=r"absent/toy-v0\.hdf5 does not exist"):
        D4RLExperienceReplay("toy-v0", root=root, download=False)
    assert not root.exists()


def test_unknown_dataset_name_is_named(tmp_path):
    with pytest.raises(KeyError, match="unknown dataset_id 'no-such-data-v9'"):
        D4RLExperienceReplay("no-such-data-v9", root=tmp_path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="expected dataset_id to be a D4RL id"):
        D4RLExperienceReplay("../escape", root=tmp_path)


def test_offline_download_names_the_url(tmp_path):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/toy.hdf5"
    with pytest.raises(ConnectionError, match=f"cannot reach {url}"):
        D4RLExperienceReplay("toy-v0", root=tmp_path / "root", url=url)
    assert not (tmp_path / "root").exists() or list((tmp_path / "root").iterdir()) == []


def test_truncated_file_is_named_and_nothing_half_written_is_left(tmp_path):
    source = tmp_path / "toy-v0.hdf5"
    write_d4rl(source, steps=4000)
    source.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    with pytest.raises(ValueError, match=r"toy-v0\.hdf5 is not a readable HDF5 file"):
        D4RLExperienceReplay("toy-v0", root=tmp_path, download=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy-v0.hdf5"]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda p: write_d4rl(p, drop=("terminals",)), r"missing datasets \['terminals'\]"),
        (lambda p: p.write_text("observations,actions\n1,2\n"), "not a readable HDF5 file"),
    ],
    ids=["hdf5-without-terminals", "csv"],
)
def test_wrong_format_is_named(tmp_path, make, match):
    make(tmp_path / "toy-v0.hdf5")
    with pytest.raises(ValueError, match=match):
        D4RLExperienceReplay("toy-v0", root=tmp_path, download=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy-v0.hdf5"]


def test_mismatched_lengths_and_torchrl_only_options(tmp_path):
    with h5py.File(tmp_path / "toy-v0.hdf5", "w") as handle:
        handle["observations"] = np.zeros((5, 2), np.float32)
        handle["actions"] = np.zeros((4, 1), np.float32)
        handle["rewards"] = np.zeros(5, np.float32)
        handle["terminals"] = np.zeros(5, bool)
    with pytest.raises(ValueError, match=r"5 rows \(as 'rewards'\), got \{'actions': 4\}"):
        D4RLExperienceReplay("toy-v0", root=tmp_path, download=False)
    with pytest.raises(ValueError, match="from_env=True needs the D4RL library's loader"):
        D4RLExperienceReplay("toy-v0", root=tmp_path, from_env=True)
