import csv
import json

import numpy as np
import pytest
import torch

from rl_objectives.loggers import CSVLogger


def read_csv(path):
    with path.open() as file:
        return list(csv.DictReader(file))


def test_scalars_one_file_each_with_steps(tmp_path):
    logger = CSVLogger("exp", log_dir=tmp_path)
    logger.log_scalar("train/reward", torch.tensor(1.5), step=10)
    logger.log_scalar("train/reward", np.float32(2.5), step=20)
    logger.log_scalar("loss", 3)
    logger.log_scalar("loss", 0.1)
    assert read_csv(tmp_path / "exp" / "scalars" / "train" / "reward.csv") == [
        {"step": "10", "value": "1.5"},
        {"step": "20", "value": "2.5"},
    ]
    rows = read_csv(tmp_path / "exp" / "scalars" / "loss.csv")
    assert [(int(r["step"]), float(r["value"])) for r in rows] == [(0, 3.0), (1, 0.1)]
    assert repr(logger) == f"CSVLogger(exp_name='exp', log_dir={str(tmp_path)!r})"


def test_videos_as_tensors_and_gifs(tmp_path):
    from PIL import Image, ImageSequence

    video = torch.randint(0, 256, (2, 5, 3, 8, 6), dtype=torch.uint8)  # two clips side by side
    CSVLogger("exp", log_dir=tmp_path).log_video("rollout", video, step=7)
    saved = torch.load(tmp_path / "exp" / "videos" / "rollout_7.pt")
    assert saved.shape == (5, 8, 12, 3)
    assert torch.equal(saved[..., 6:, :], video[1].permute(0, 2, 3, 1))

    gif_logger = CSVLogger("gif", log_dir=tmp_path, video_format="gif", video_fps=10)
    gif_logger.log_video("rollout", torch.rand(4, 1, 8, 8))
    with Image.open(tmp_path / "gif" / "videos" / "rollout_0.gif") as image:
        frames = list(ImageSequence.Iterator(image))
        assert (len(frames), image.size, image.info["duration"]) == (4, (8, 8), 100)


def test_histograms_and_hparams(tmp_path):
    logger = CSVLogger("exp", log_dir=tmp_path)
    data = torch.tensor([0.0, 0.1, 0.9, 1.0, 1.0])
    logger.log_histogram("weights", data, step=3, bins=2)
    rows = read_csv(tmp_path / "exp" / "histograms" / "weights.csv")
    assert [(r["step"], float(r["bin_start"]), float(r["bin_end"]), r["count"]) for r in rows] == [
        ("3", 0.0, 0.5, "2"),
        ("3", 0.5, 1.0, "3"),
    ]
    logger.log_hparams({"lr": 1e-3, "net": {"depth": 2, "act": torch.nn.Tanh}})
    logger.log_hparams({"seed": 1, "scheduler": None})
    hparams = json.loads((tmp_path / "exp" / "hparams.json").read_text())
    assert hparams == {
        "lr": 1e-3,
        "net.act": "<class 'torch.nn.modules.activation.Tanh'>",
        "net.depth": 2,
        "seed": 1,
        "scheduler": None,
    }


def test_bad_input(tmp_path):
    logger = CSVLogger("exp", log_dir=tmp_path)
    with pytest.raises(ValueError, match="expected a metric name"):
        logger.log_scalar("../escape", 1.0)
    with pytest.raises(ValueError, match=r"'x' must hold one value, got a tensor of shape \(2,\)"):
        logger.log_scalar("x", torch.ones(2))
    with pytest.raises(TypeError, match="'x' must be a real number"):
        logger.log_scalar("x", "1.0")
    with pytest.raises(ValueError, match="step must be a non-negative int or None, got -1"):
        logger.log_scalar("x", 1.0, step=-1)
    with pytest.raises(ValueError, match=r"expected a video of shape \[T, C, H, W\]"):
        logger.log_video("v", torch.zeros(3, 2, 4, 4))
    with pytest.raises(TypeError, match="expected uint8 frames or floats"):
        logger.log_video("v", torch.zeros(3, 3, 4, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="expected a non-empty tensor of finite values"):
        logger.log_histogram("h", torch.tensor([1.0, float("nan")]))
    with pytest.raises(TypeError, match="expected a mapping of hyperparameters"):
        logger.log_hparams([("lr", 1)])
    with pytest.raises(ValueError, match="video_format must be one of"):
        CSVLogger("exp", log_dir=tmp_path, video_format="mp4")
    with pytest.raises(ValueError, match="exp_name must be a non-empty string"):
        CSVLogger("", log_dir=tmp_path)
