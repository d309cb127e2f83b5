"""The issue's bad-input cases for every dataset reader: a missing root, a truncated file, a
file of another format and an unknown dataset name each end in an error naming the file or
the argument, and leave nothing half-written in ``root`` (only the files the test put
there)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from rl_buffers.datasets import (
    AtariDQNExperienceReplay,
    D4RLExperienceReplay,
    GenDGRLExperienceReplay,
    LeRobotExperienceReplay,
    MinariExperienceReplay,
    RobosetExperienceReplay,
)

h5py = pytest.importorskip("h5py", reason='pip install "rl-buffers[h5py]"')


def files(root: Path) -> list[str]:
    """Every file and folder under ``root`` (relative, sorted); [] when it does not exist."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


# D4RL ------------------------------------------------------------------------------------


def write_d4rl(path: Path, steps: int = 400) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as handle:
        handle["observations"] = np.random.default_rng(0).normal(size=(steps, 3))
        handle["actions"] = np.zeros((steps, 1), np.float32)
        handle["rewards"] = np.ones(steps, np.float32)
        handle["terminals"] = np.zeros(steps, bool)


def test_d4rl_bad_input(tmp_path):
    absent = tmp_path / "absent"
    with pytest.raises(FileNotFoundError, match=r"absent/toy-v0\.hdf5 does not exist"):
        D4RLExperienceReplay("toy-v0", root=absent, download=False)
    assert not absent.exists()
    root = tmp_path / "root"
    write_d4rl(root / "cut-v0.hdf5")
    truncate(root / "cut-v0.hdf5")
    with pytest.raises(ValueError, match=r"cut-v0\.hdf5 (is not a readable|cannot be read)"):
        D4RLExperienceReplay("cut-v0", root=root, download=False)
    (root / "text-v0.hdf5").write_text("observations,actions\n1,2\n")
    with pytest.raises(ValueError, match=r"text-v0\.hdf5 is not a readable HDF5 file"):
        D4RLExperienceReplay("text-v0", root=root, download=False)
    with pytest.raises(KeyError, match=r"unknown dataset_id 'no-such-v9'"):
        D4RLExperienceReplay("no-such-v9", root=root)
    assert files(root) == ["cut-v0.hdf5", "text-v0.hdf5"]


# RoboSet ---------------------------------------------------------------------------------


def test_roboset_bad_input(tmp_path):
    absent = tmp_path / "absent"
    with pytest.raises(FileNotFoundError, match=r"absent/toy\.h5 does not exist"):
        RobosetExperienceReplay("toy", root=absent, download=False)
    assert not absent.exists()
    root = tmp_path / "root"
    root.mkdir()
    with h5py.File(root / "cut.h5", "w") as handle:
        for k in range(3):
            trial = handle.create_group(f"Trial{k}")
            trial["observations"] = np.random.default_rng(k).normal(size=(200, 4))
            trial["actions"] = np.zeros((200, 1), np.float32)
            trial["rewards"] = np.zeros(200, np.float32)
            trial["done"] = np.zeros(200, bool)
    truncate(root / "cut.h5")
    with pytest.raises(ValueError, match=r"cut\.h5 (is not a readable|cannot be read)"):
        RobosetExperienceReplay("cut", root=root, download=False)
    (root / "text.h5").write_text("not hdf5")
    with pytest.raises(ValueError, match=r"text\.h5 is not a readable HDF5 file"):
        RobosetExperienceReplay("text", root=root, download=False)
    with pytest.raises(FileNotFoundError, match=r"unknown\.h5 does not exist"):
        RobosetExperienceReplay("unknown", root=root)
    assert files(root) == ["cut.h5", "text.h5"]


# Atari DQN replay --------------------------------------------------------------------------


def write_checkpoint(folder: Path, frames: int = 50) -> None:
    import gzip

    folder.mkdir(parents=True, exist_ok=True)
    arrays = {
        "observation": np.zeros((frames, 8, 8), np.uint8),
        "action": np.zeros(frames, np.int32),
        "reward": np.zeros(frames, np.float32),
        "terminal": np.zeros(frames, np.uint8),
    }
    for key, value in arrays.items():
        with gzip.open(folder / f"$store$_{key}_ckpt.0.gz", "wb") as handle:
            np.save(handle, value)


def test_atari_dqn_bad_input(tmp_path):
    absent = tmp_path / "absent"
    with pytest.raises(FileNotFoundError, match=r"absent/Pong/1/replay_logs/.*does not exist"):
        AtariDQNExperienceReplay("Pong/1", root=absent, download=False, checkpoints=[0])
    assert not absent.exists()
    root = tmp_path / "root"
    logs = root / "Pong" / "1" / "replay_logs"
    write_checkpoint(logs)
    truncate(logs / "$store$_observation_ckpt.0.gz")
    with pytest.raises(ValueError, match=r"observation_ckpt\.0\.gz is not a gzipped numpy array"):
        AtariDQNExperienceReplay("Pong/1", root=root, download=False, checkpoints=[0])
    logs = root / "Pong" / "2" / "replay_logs"
    write_checkpoint(logs)
    (logs / "$store$_reward_ckpt.0.gz").write_text("reward,1.0\n")
    with pytest.raises(ValueError, match=r"reward_ckpt\.0\.gz is not a gzipped numpy array"):
        AtariDQNExperienceReplay("Pong/2", root=root, download=False, checkpoints=[0])
    with pytest.raises(ValueError, match=r"expected dataset_id to be '<Game>/<run>'.*'Pong-v5'"):
        AtariDQNExperienceReplay("Pong-v5", root=root)
    written = [
        f"Pong/{run}/replay_logs/$store${key}_ckpt.0.gz"
        for run in (1, 2)
        for key in ("_action", "_observation", "_reward", "_terminal")
    ]
    assert files(root) == sorted(
        ["Pong", "Pong/1", "Pong/1/replay_logs", "Pong/2", "Pong/2/replay_logs", *written]
    )


# LeRobot ---------------------------------------------------------------------------------


def test_lerobot_bad_input(tmp_path, http_server):
    pq = pytest.importorskip("pyarrow.parquet", reason='pip install "rl-buffers[lerobot]"')
    pa = pytest.importorskip("pyarrow", reason='pip install "rl-buffers[lerobot]"')
    absent = tmp_path / "absent"
    with pytest.raises(FileNotFoundError, match=r"absent/lerobot/toy/meta/info\.json does not"):
        LeRobotExperienceReplay("lerobot/toy", root=absent, download=False)
    assert not absent.exists()
    root = tmp_path / "root"
    snapshot = root / "lerobot" / "cut"
    (snapshot / "meta").mkdir(parents=True)
    (snapshot / "meta" / "info.json").write_text(json.dumps({"fps": 10, "features": {}}))
    (snapshot / "data").mkdir()
    table = pa.table({"action": np.arange(500.0), "episode_index": np.zeros(500, np.int64)})
    pq.write_table(table, snapshot / "data" / "episode_000000.parquet")
    truncate(snapshot / "data" / "episode_000000.parquet")
    with pytest.raises(ValueError, match=r"episode_000000\.parquet is not a readable parquet"):
        LeRobotExperienceReplay("lerobot/cut", root=root, download=False)
    (snapshot / "meta" / "info.json").write_text("fps: 10\n")  # YAML, not JSON
    with pytest.raises(ValueError, match=r"cut/meta/info\.json is not JSON"):
        LeRobotExperienceReplay("lerobot/cut", root=root, download=False)
    base, _ = http_server()  # serves nothing: every dataset name is unknown there
    url = rf"{base}/datasets/lerobot/unknown/resolve/main/meta/info\.json answered HTTP 404"
    with pytest.raises(ConnectionError, match=url):
        LeRobotExperienceReplay("lerobot/unknown", root=root, endpoint=base)
    assert files(root) == [
        "lerobot",
        "lerobot/cut",
        "lerobot/cut/data",
        "lerobot/cut/data/episode_000000.parquet",
        "lerobot/cut/meta",
        "lerobot/cut/meta/info.json",
    ]


# Minari ----------------------------------------------------------------------------------


@pytest.fixture
def minari_store(tmp_path, monkeypatch):
    pytest.importorskip("minari", reason='pip install "rl-buffers[minari]"')
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def record_minari(dataset_id: str) -> None:
    """Two random CartPole episodes stored with minari's own writer."""
    gym = pytest.importorskip("gymnasium")
    import minari
    from minari.data_collector import EpisodeBuffer

    env = gym.make("CartPole-v1", max_episode_steps=30)
    env.action_space.seed(0)
    buffers = []
    for episode in range(2):
        observation, _ = env.reset(seed=episode)
        steps = {
            "observations": [observation],
            "actions": [],
            "rewards": [],
            "terminations": [],
            "truncations": [],
        }
        while True:
            action = env.action_space.sample()
            observation, reward, terminated, truncated, _ = env.step(action)
            for key, value in zip(
                steps, (observation, action, reward, terminated, truncated), strict=True
            ):
                steps[key].append(value)
            if terminated or truncated:
                break
        buffers.append(EpisodeBuffer(id=episode, infos={}, **steps))
    minari.create_dataset_from_buffers(
        dataset_id=dataset_id,
        buffer=buffers,
        env=env,
        eval_env=env.spec,
        algorithm_name="random",
        author="rl-buffers tests",
        author_email="tests@example.com",
        code_permalink="https://example.com",
    )


def test_minari_bad_input(tmp_path, minari_store):
    absent = tmp_path / "absent"
    with pytest.raises(FileNotFoundError, match=r"no local minari dataset 'cartpole/none-v0'"):
        MinariExperienceReplay("cartpole/none-v0", root=absent)
    assert not absent.exists()
    record_minari("cartpole/cut-v0")
    data_file = minari_store / "cartpole" / "cut-v0" / "data" / "main_data.hdf5"
    assert data_file.exists()
    truncate(data_file)
    root = tmp_path / "rb"
    with pytest.raises(ValueError, match=r"cut-v0/data/main_data\.hdf5 cannot be read"):
        MinariExperienceReplay("cartpole/cut-v0", root=root)
    data_file.write_text("not hdf5")
    with pytest.raises(ValueError, match=r"cut-v0/data/main_data\.hdf5 cannot be read"):
        MinariExperienceReplay("cartpole/cut-v0", root=root)
    assert files(root) == []


# Every reader ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "missing", "what"),
    [
        (lambda root: D4RLExperienceReplay("toy-v0", root=root, download=False),
         "toy-v0.hdf5", "the dataset's HDF5 file"),
        (lambda root: RobosetExperienceReplay("toy", root=root, download=False),
         "toy.h5", "the dataset's HDF5 file"),
        (lambda root: GenDGRLExperienceReplay("bigfish-1M_E", root=root, download=False),
         "bigfish-1M_E.tar.xz", "the dataset's archive"),
        (lambda root: AtariDQNExperienceReplay("Pong/1", root=root, download=False,
                                               checkpoints=[0]),
         "Pong/1/replay_logs/$store$_observation_ckpt.0.gz", "the run's checkpoint file"),
    ],
    ids=["d4rl", "roboset", "gen_dgrl", "atari_dqn"],
)  # fmt: skip
def test_a_missing_source_reads_the_same_in_every_reader(tmp_path, build, missing, what):
    """One sentence for a missing source file with download=False, naming the file."""
    root = tmp_path / "absent"
    pattern = (
        rf"^\w+ExperienceReplay: {re.escape(str(root / missing))} does not exist and "
        rf"download=False\. Put {re.escape(what)} there, or pass download=True\.$"
    )
    with pytest.raises(FileNotFoundError, match=pattern):
        build(root)
    assert not root.exists()
