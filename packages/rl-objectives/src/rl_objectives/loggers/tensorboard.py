"""A logger writing TensorBoard event files: :class:`TensorboardLogger`."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from rl_objectives.loggers._utils import (
    as_float,
    check_name,
    check_step,
    flatten_hparams,
    histogram_data,
    scalar_hparam,
    video_frames,
    write_gif,
)
from rl_objectives.loggers.common import Logger


class TensorboardLogger(Logger):
    """Writes scalars, videos, hyperparameters and histograms to TensorBoard event files.

    The events of the run go to ``log_dir/exp_name`` (open it with
    ``tensorboard --logdir log_dir``). Videos are encoded as animated GIFs with Pillow (the
    TensorBoard image plugin plays them), so no moviepy is needed. Hyperparameters go to the
    HParams plugin of the same run.

    Needs ``pip install "rl-objectives[tensorboard]"``.

    Args:
        exp_name: the run's name.
        log_dir: the parent folder. Defaults to ``"tb_logs"``.

    Keyword Args:
        video_fps: default frames per second of videos. Defaults to 30.

    Raises:
        ImportError: tensorboard is not installed.

    Examples:
        >>> import tempfile
        >>> from rl_objectives.loggers import TensorboardLogger
        >>> logger = TensorboardLogger("run", log_dir=tempfile.mkdtemp())
        >>> logger.log_scalar("loss", 0.5, step=10)
        >>> logger.close()
        >>> print(logger.experiment.log_dir.endswith("run"))
        True
    """

    def __init__(
        self, exp_name: str, log_dir: str | os.PathLike = "tb_logs", *, video_fps: int = 30
    ) -> None:
        self.video_fps = video_fps
        super().__init__(exp_name, log_dir)

    def _create_experiment(self) -> Any:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as err:
            raise ImportError(
                'TensorboardLogger needs tensorboard: pip install "rl-objectives[tensorboard]".'
            ) from err
        return SummaryWriter(log_dir=os.path.join(self.log_dir, self.exp_name))

    def log_scalar(self, name: str, value: float | torch.Tensor, step: int | None = None) -> None:
        """Adds a scalar event; see :meth:`Logger.log_scalar`."""
        owner = "TensorboardLogger.log_scalar"
        check_name(owner, name)
        value = as_float(owner, name, value)
        self.experiment.add_scalar(name, value, global_step=check_step(owner, step))

    def log_video(
        self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Adds a video as an animated GIF image event; see :meth:`Logger.log_video`.

        Keyword Args:
            fps: frames per second. Defaults to ``video_fps``.
        """
        from tensorboard.compat.proto.summary_pb2 import Summary

        owner = "TensorboardLogger.log_video"
        check_name(owner, name)
        frames = video_frames(owner, video)
        step = check_step(owner, step)
        with tempfile.TemporaryDirectory() as tmp:
            path = write_gif(
                owner, frames, Path(tmp) / "video.gif", kwargs.get("fps", self.video_fps)
            )
            encoded = path.read_bytes()
        _, height, width, channels = frames.shape
        image = Summary.Image(
            height=height, width=width, colorspace=channels, encoded_image_string=encoded
        )
        summary = Summary(value=[Summary.Value(tag=name, image=image)])
        self.experiment._get_file_writer().add_summary(summary, global_step=step)

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Writes the hyperparameters to the HParams plugin; see :meth:`Logger.log_hparams`."""
        from torch.utils.tensorboard.summary import hparams

        flat = flatten_hparams("TensorboardLogger.log_hparams", cfg)
        experiment, start, end = hparams(
            {key: scalar_hparam(value) for key, value in flat.items()}, {}
        )
        writer = self.experiment._get_file_writer()
        for summary in (experiment, start, end):
            writer.add_summary(summary)

    def log_histogram(
        self, name: str, data: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Adds a histogram event; see :meth:`Logger.log_histogram`.

        Keyword Args:
            bins: TensorBoard's bin rule (``"tensorflow"``, ``"auto"``, an int, ...).
                Defaults to ``"tensorflow"``.
        """
        owner = "TensorboardLogger.log_histogram"
        check_name(owner, name)
        flat = histogram_data(owner, data)
        self.experiment.add_histogram(
            name,
            flat.numpy(),
            global_step=check_step(owner, step),
            bins=kwargs.get("bins", "tensorflow"),
        )

    def close(self) -> None:
        """Flushes the event file and closes the writer."""
        self.experiment.flush()
        self.experiment.close()
