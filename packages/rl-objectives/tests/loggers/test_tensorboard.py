import io

import pytest
import torch

from rl_objectives.loggers import TensorboardLogger

pytest.importorskip("tensorboard", reason='needs "rl-objectives[tensorboard]"')


def read_events(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(folder), size_guidance={"images": 0, "histograms": 0})
    accumulator.Reload()
    return accumulator


def test_everything_is_read_back_from_the_event_file(tmp_path):
    from PIL import Image, ImageSequence

    logger = TensorboardLogger("exp", log_dir=tmp_path, video_fps=5)
    logger.log_scalar("train/reward", 1.5, step=10)
    logger.log_scalar("train/reward", torch.tensor(2.5), step=20)
    logger.log_video("rollout", torch.rand(6, 3, 8, 10), step=20)
    logger.log_histogram("weights", torch.arange(100.0), step=20)
    logger.log_hparams({"lr": 1e-3, "net": {"depth": 2}, "algo": "ppo"})
    logger.close()

    events = read_events(tmp_path / "exp")
    scalars = events.Scalars("train/reward")
    assert [(e.step, e.value) for e in scalars] == [(10, 1.5), (20, 2.5)]

    (image,) = events.Images("rollout")
    assert (image.step, image.width, image.height) == (20, 10, 8)
    with Image.open(io.BytesIO(image.encoded_image_string)) as gif:
        assert gif.format == "GIF"
        assert len(list(ImageSequence.Iterator(gif))) == 6

    (histogram,) = events.Histograms("weights")
    assert histogram.step == 20
    assert (histogram.histogram_value.num, histogram.histogram_value.max) == (100, 99.0)
    assert histogram.histogram_value.sum == pytest.approx(4950.0)

    from tensorboard.plugins.hparams import plugin_data_pb2

    content = events.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    info = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    assert info.hparams["lr"].number_value == pytest.approx(1e-3)
    assert info.hparams["net.depth"].number_value == 2
    assert info.hparams["algo"].string_value == "ppo"
