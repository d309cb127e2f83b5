"""A logger for Weights & Biases runs, online or offline: :class:`WandbLogger`."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
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

#: The x-axis of every metric this logger writes (the ``step`` argument of the log calls).
STEP_METRIC = "trainer/step"


class WandbLogger(Logger):
    """Logs to a Weights & Biases run.

    Every metric is plotted against ``"trainer/step"`` (the ``step`` argument), so metrics
    logged at different rates share one x-axis. Videos are encoded as GIFs with Pillow and
    logged as ``wandb.Video``; hyperparameters go to the run's config; histograms are
    ``wandb.Histogram``. With ``offline=True`` (or ``WANDB_MODE=offline``) nothing leaves the
    machine: the run is written under ``save_dir/wandb/offline-run-*`` and can be uploaded
    later with ``wandb sync``.

    Needs ``pip install "rl-objectives[wandb]"``.

    Args:
        exp_name: the run's name.

    Keyword Args:
        offline: run in offline mode. Defaults to ``False`` (wandb's own setting decides).
        save_dir: where wandb writes its files. Defaults to the current directory.
        id: resume the run with this id.
        project: the wandb project.
        video_fps: default frames per second of videos. Defaults to 30.
        **kwargs: passed on to ``wandb.init`` (``group``, ``tags``, ``entity``, ...).

    Raises:
        ImportError: wandb is not installed.
    """

    def __init__(
        self,
        exp_name: str,
        *,
        offline: bool = False,
        save_dir: str | os.PathLike | None = None,
        id: str | None = None,
        project: str | None = None,
        video_fps: int = 30,
        **kwargs: Any,
    ) -> None:
        self.offline = offline
        self.id = id
        self.project = project
        self.video_fps = video_fps
        self._init_kwargs = kwargs
        super().__init__(exp_name, save_dir if save_dir is not None else os.getcwd())

    def _create_experiment(self) -> Any:
        try:
            import wandb
        except ImportError as err:
            raise ImportError(
                'WandbLogger needs wandb: pip install "rl-objectives[wandb]".'
            ) from err
        Path(self.log_dir).mkdir(parents=True, exist_ok=True)
        kwargs = {"reinit": "create_new", **self._init_kwargs}
        if self.offline:
            kwargs["mode"] = "offline"
        run = wandb.init(
            dir=self.log_dir, id=self.id, project=self.project, name=self.exp_name, **kwargs
        )
        run.define_metric(STEP_METRIC)
        run.define_metric("*", step_metric=STEP_METRIC)
        return run

    def _log(self, name: str, value: Any, step: int | None) -> None:
        row = {name: value}
        if step is not None:
            row[STEP_METRIC] = step
        self.experiment.log(row)

    def log_scalar(self, name: str, value: float | torch.Tensor, step: int | None = None) -> None:
        """Logs ``{name: value, "trainer/step": step}``; see :meth:`Logger.log_scalar`."""
        owner = "WandbLogger.log_scalar"
        check_name(owner, name)
        self._log(name, as_float(owner, name, value), check_step(owner, step))

    def log_video(
        self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Logs a GIF ``wandb.Video``; see :meth:`Logger.log_video`.

        Keyword Args:
            fps: frames per second. Defaults to ``video_fps``.
        """
        import wandb

        owner = "WandbLogger.log_video"
        check_name(owner, name)
        frames = video_frames(owner, video)
        step = check_step(owner, step)
        fps = kwargs.get("fps", self.video_fps)
        with tempfile.TemporaryDirectory() as tmp:
            path = write_gif(owner, frames, Path(tmp) / "video.gif", fps)
            # wandb copies the file into the run's media folder when it is logged.
            self._log(name, wandb.Video(str(path), fps=fps, format="gif"), step)

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Updates the run's config; see :meth:`Logger.log_hparams`."""
        flat = flatten_hparams("WandbLogger.log_hparams", cfg)
        self.experiment.config.update(
            {key: scalar_hparam(value) for key, value in flat.items()}, allow_val_change=True
        )

    def log_histogram(
        self, name: str, data: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Logs a ``wandb.Histogram``; see :meth:`Logger.log_histogram`.

        Keyword Args:
            bins: the number of equal-width bins. Defaults to 64 (wandb's limit is 512).
        """
        import wandb

        owner = "WandbLogger.log_histogram"
        check_name(owner, name)
        flat = histogram_data(owner, data).numpy()
        bins = kwargs.get("bins", 64)
        histogram = wandb.Histogram(np_histogram=np.histogram(flat, bins=bins))
        self._log(name, histogram, check_step(owner, step))

    def close(self) -> None:
        """Finishes the run (in offline mode: writes the run's files to disk)."""
        self.experiment.finish()
