import json
import struct
import time

import pytest
import torch

from rl_objectives.loggers import WandbLogger

pytest.importorskip("wandb", reason='needs "rl-objectives[wandb]"')

_BLOCK = 32768
_HEADER = 7  # ":W&B", a 2-byte key and a version byte


def read_records(path):
    """Reads the records of a .wandb transaction log (LevelDB-style 32 KiB blocks)."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, offset = [], b"", _HEADER
    while offset + 7 <= len(data):
        left_in_block = _BLOCK - offset % _BLOCK
        if left_in_block < 7:  # block trailer: zero padding
            offset += left_in_block
            continue
        _, length, kind = struct.unpack("<IHB", data[offset : offset + 7])
        chunk = data[offset + 7 : offset + 7 + length]
        offset += 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk  # full/first or middle/last
        if kind in (1, 4):
            records.append(wandb_internal_pb2.Record.FromString(pending))
    return records


def read_finished_run(path, timeout=30.0):
    """The records of a finished run: wandb-core writes the log from its own process, so the
    file may still be growing for a moment after ``finish()`` returns."""
    deadline = time.monotonic() + timeout
    while True:
        records = read_records(path)
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            return records
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} holds no exit record after {timeout} s")
        time.sleep(0.1)


def item_key(item):
    """The name of a history/config item: ``key``, or its ``nested_key`` path."""
    return item.key or "/".join(item.nested_key)


def test_offline_run_is_read_back_from_disk(tmp_path, monkeypatch):
    from PIL import Image, ImageSequence

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = WandbLogger("exp", offline=True, save_dir=tmp_path, project="tests")
    logger.log_scalar("train/reward", 1.5, step=10)
    logger.log_scalar("train/reward", torch.tensor(2.5), step=20)
    logger.log_video("rollout", torch.rand(4, 3, 6, 7), step=20, fps=8)
    logger.log_histogram("weights", torch.arange(10.0), step=20, bins=5)
    logger.log_hparams({"lr": 1e-3, "net": {"depth": 2}})
    run_dir = logger.experiment.dir
    logger.close()

    (run_file,) = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
    records = read_finished_run(run_file)
    rows = [
        {item_key(item): json.loads(item.value_json) for item in r.history.item}
        for r in records
        if r.WhichOneof("record_type") == "history"
    ]
    rewards = [(row["trainer/step"], row["train/reward"]) for row in rows if "train/reward" in row]
    assert rewards == [(10, 1.5), (20, 2.5)]
    # Media rows are flattened: {"rollout/_type": ..., "rollout/path": ...}.
    (video,) = [row for row in rows if "rollout/_type" in row]
    assert (video["rollout/_type"], video["trainer/step"]) == ("video-file", 20)
    with Image.open(f"{run_dir}/{video['rollout/path']}") as gif:
        assert (gif.size, len(list(ImageSequence.Iterator(gif)))) == ((7, 6), 4)
    (histogram,) = [row for row in rows if "weights/_type" in row]
    assert histogram["weights/values"] == [2, 2, 2, 2, 2]
    assert histogram["weights/bins"] == pytest.approx([0, 1.8, 3.6, 5.4, 7.2, 9])
    config = {}
    for r in records:
        if r.WhichOneof("record_type") == "config":
            config.update({item_key(item): json.loads(item.value_json) for item in r.config.update})
    assert config["lr"] == pytest.approx(1e-3)
    assert config["net.depth"] == 2
