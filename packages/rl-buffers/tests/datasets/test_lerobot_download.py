"""LeRobotExperienceReplay's download path and video decoding: a LeRobot v2.1 snapshot
(parquet written with pyarrow, mp4 written with PyAV) served by a local HTTP server."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest
import torch

from rl_buffers.datasets import LeRobotExperienceReplay
from rl_buffers.datasets._download import partial_path

pa = pytest.importorskip("pyarrow", reason='pip install "rl-buffers[lerobot]"')
pq = pytest.importorskip("pyarrow.parquet", reason='pip install "rl-buffers[lerobot]"')
av = pytest.importorskip("av", reason='pip install "rl-buffers[lerobot]"')

FPS = 10
EPISODES = {0: 4, 1: 3}  # episode index: frames
DATA = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
VIDEO = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"


def gray(episode: int, frame: int) -> int:
    """The grey level of a frame: far enough apart to survive lossy coding."""
    return 30 + 100 * episode + 25 * frame


def write_video(path, levels) -> None:
    """An mp4 (H.264) of 16x16 frames of the given grey levels, written with PyAV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width = stream.height = 16
        stream.pix_fmt = "yuv420p"
        for level in levels:
            image = np.full((16, 16, 3), level, dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def write_snapshot(folder) -> None:
    """A LeRobot v2.1 snapshot: info, episodes and tasks, one parquet and one video per
    episode; state of frame f of episode e is [10 e + f]."""
    (folder / "meta").mkdir(parents=True)
    info = {
        "codebase_version": "v2.1",
        "fps": FPS,
        "total_episodes": len(EPISODES),
        "total_frames": sum(EPISODES.values()),
        "chunks_size": 1000,
        "data_path": DATA,
        "video_path": VIDEO,
        "features": {
            "observation.state": {"dtype": "float32", "shape": [1]},
            "observation.images.top": {"dtype": "video", "shape": [16, 16, 3]},
            "action": {"dtype": "float32", "shape": [1]},
        },
    }
    (folder / "meta" / "info.json").write_text(json.dumps(info))
    episodes = [{"episode_index": e, "tasks": ["push"], "length": n} for e, n in EPISODES.items()]
    (folder / "meta" / "episodes.jsonl").write_text("\n".join(map(json.dumps, episodes)))
    (folder / "meta" / "tasks.jsonl").write_text('{"task_index": 0, "task": "push"}\n')
    for e, n in EPISODES.items():
        f = np.arange(n)
        table = pa.table(
            {
                "observation.state": [[float(10 * e + i)] for i in f],
                "action": [[float(i)] for i in f],
                "episode_index": np.full(n, e, np.int64),
                "frame_index": f.astype(np.int64),
                "timestamp": (f / FPS).astype(np.float32),
                "task_index": np.zeros(n, np.int64),
            }
        )
        path = folder / DATA.format(episode_chunk=0, episode_index=e)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        video = VIDEO.format(episode_chunk=0, video_key="observation.images.top", episode_index=e)
        write_video(folder / video, [gray(e, i) for i in f])


def served_snapshot(http_server):
    """Writes the snapshot where the hub would serve it; returns the endpoint and the log."""
    write_snapshot(http_server.folder / "datasets" / "lerobot" / "toy" / "resolve" / "main")
    return http_server()


def test_download_then_decode_the_videos(http_server, tmp_path):
    base, log = served_snapshot(http_server)
    root = tmp_path / "root"
    data = LeRobotExperienceReplay("lerobot/toy", root=root, endpoint=base, batch_size=2)
    rows = data[:]
    assert len(data) == 7
    assert rows["observation", "state"].squeeze(-1).tolist() == [0, 1, 2, 3, 10, 11, 12]
    frames = rows["observation", "image", "top"]
    assert frames.shape == (7, 3, 16, 16)
    assert frames.dtype == torch.uint8
    expected = [gray(e, i) for e, n in EPISODES.items() for i in range(n)]
    means = frames.float().mean(dim=(1, 2, 3))
    assert (means - torch.tensor(expected, dtype=torch.float)).abs().max() < 6
    assert rows["next", "done"].squeeze(-1).tolist() == [0, 0, 0, 1, 0, 0, 1]
    assert data.metadata["tasks"] == {"0": "push"}
    assert data.metadata["videos_decoded"] is True
    requested = [line.split()[0] for line in log.read_text().splitlines()]
    prefix = "/datasets/lerobot/toy/resolve/main/"
    assert requested[:3] == [
        prefix + "meta/info.json",
        prefix + "meta/tasks.jsonl",
        prefix + "meta/episodes.jsonl",
    ]
    assert len(requested) == 3 + 2 + 2  # two parquets, two videos, each once
    assert not list(root.rglob("*.part"))
    # A second buffer reads the converted rows: no request.
    again = LeRobotExperienceReplay(
        "lerobot/toy", root=root, endpoint=base, slice_len=2, batch_size=4
    )
    assert len(log.read_text().splitlines()) == len(requested)
    torch.manual_seed(0)
    batch = again.sample().reshape(-1, 2)
    assert (batch["episode"][:, 0] == batch["episode"][:, 1]).all()
    assert torch.equal(again[:]["observation", "image", "top"], frames)


def test_an_interrupted_video_download_resumes(http_server, tmp_path):
    base, log = served_snapshot(http_server)
    root = tmp_path / "root"
    video = VIDEO.format(episode_chunk=0, video_key="observation.images.top", episode_index=1)
    served = http_server.folder / "datasets/lerobot/toy/resolve/main" / video
    part = partial_path(root / "lerobot" / "toy" / video)
    part.parent.mkdir(parents=True)
    part.write_bytes(served.read_bytes()[:100])  # what a killed download left
    data = LeRobotExperienceReplay("lerobot/toy", root=root, endpoint=base)
    assert len(data) == 7
    assert f"/datasets/lerobot/toy/resolve/main/{video} bytes=100-" in log.read_text()
    assert (root / "lerobot" / "toy" / video).read_bytes() == served.read_bytes()


def test_offline_names_the_url_and_leaves_nothing(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = tmp_path / "root"
    url = rf"http://127\.0\.0\.1:{port}/datasets/lerobot/toy/resolve/main/meta/info\.json"
    with pytest.raises(ConnectionError, match=rf"cannot reach {url}"):
        LeRobotExperienceReplay("lerobot/toy", root=root, endpoint=f"http://127.0.0.1:{port}")
    assert not root.exists()


def test_bad_videos_name_the_file_and_leave_no_rows(tmp_path):
    snapshot = tmp_path / "lerobot" / "toy"
    write_snapshot(snapshot)
    video = snapshot / VIDEO.format(
        episode_chunk=0, video_key="observation.images.top", episode_index=1
    )
    intact = video.read_bytes()
    video.write_bytes(intact[:60])  # truncated
    with pytest.raises(ValueError, match=r"episode_000001\.mp4 is not a readable video"):
        LeRobotExperienceReplay("lerobot/toy", root=tmp_path, download=False)
    assert not (snapshot / "memmap").exists()
    assert sorted(p.name for p in snapshot.iterdir()) == ["data", "meta", "videos"]
    write_video(video, [gray(1, 0)])  # one frame where the parquet has three
    with pytest.raises(ValueError, match=r"episode_000001\.mp4 has no frame at 0\.1000 s"):
        LeRobotExperienceReplay("lerobot/toy", root=tmp_path, download=False)
    video.unlink()
    with pytest.raises(
        FileNotFoundError,
        match=r"episode_000001\.mp4 does not exist and "
        r"download=False",
    ):
        LeRobotExperienceReplay("lerobot/toy", root=tmp_path, download=False)
    # Without the videos the rows convert (into their own folder).
    data = LeRobotExperienceReplay("lerobot/toy", root=tmp_path, download=False, decode_video=False)
    assert ("observation", "image", "top") not in data[:].keys(include_nested=True)
    assert data.data_path.name == "memmap-no-video"
    with pytest.raises(ValueError, match=r"expected a sampler or num_slices/slice_len"):
        LeRobotExperienceReplay("lerobot/toy", root=tmp_path, slice_len=2, sampler=object())
