"""A logger for MLflow tracking servers and local stores: :class:`MLFlowLogger`."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
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


class MLFlowLogger(Logger):
    """Logs to one MLflow run of the experiment ``exp_name`` (created if missing).

    Scalars are MLflow metrics (``step`` defaults to 0), hyperparameters are run params
    (MLflow params are write-once: logging a key again with another value fails), videos are
    GIF artifacts under ``videos/`` and histograms are JSON artifacts under ``histograms/``
    (``{"step", "bin_edges", "counts"}``), since MLflow has no histogram type.

    ``tracking_uri`` is any MLflow URI: a server (``http://...``), a database
    (``sqlite:///mlflow.db``, needs the full ``mlflow`` package) or a local folder
    (``file:///abs/path``). MLflow 3 refuses the folder store unless the environment sets
    ``MLFLOW_ALLOW_FILE_STORE=true``.

    Needs ``pip install "rl-objectives[mlflow]"`` (``mlflow-skinny``; the full ``mlflow``
    works too).

    Args:
        exp_name: the MLflow experiment's name.
        tracking_uri: where MLflow stores the run.

    Keyword Args:
        run_name: the run's name. Defaults to MLflow's generated name.
        tags: tags of the run.
        video_fps: default frames per second of videos. Defaults to 30.

    Raises:
        ImportError: mlflow is not installed.
    """

    def __init__(
        self,
        exp_name: str,
        tracking_uri: str,
        *,
        run_name: str | None = None,
        tags: Mapping[str, str] | None = None,
        video_fps: int = 30,
    ) -> None:
        self.run_name = run_name
        self.tags = dict(tags or {})
        self.video_fps = video_fps
        super().__init__(exp_name, tracking_uri)

    def _create_experiment(self) -> Any:
        try:
            from mlflow.tracking import MlflowClient
        except ImportError as err:
            raise ImportError(
                'MLFlowLogger needs mlflow: pip install "rl-objectives[mlflow]".'
            ) from err
        self.client = MlflowClient(tracking_uri=self.log_dir)
        experiment = self.client.get_experiment_by_name(self.exp_name)
        experiment_id = (
            experiment.experiment_id
            if experiment is not None
            else self.client.create_experiment(self.exp_name)
        )
        run = self.client.create_run(experiment_id, tags=self.tags, run_name=self.run_name)
        self.run_id = run.info.run_id
        return run

    def log_scalar(self, name: str, value: float | torch.Tensor, step: int | None = None) -> None:
        """Logs an MLflow metric; see :meth:`Logger.log_scalar`."""
        owner = "MLFlowLogger.log_scalar"
        check_name(owner, name)
        value = as_float(owner, name, value)
        step = check_step(owner, step)
        self.client.log_metric(self.run_id, name, value, step=0 if step is None else step)

    def _log_file(self, name: str, step: int | None, folder: str, suffix: str, write) -> None:
        relative = PurePosixPath(folder) / f"{name}_{0 if step is None else step}{suffix}"
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / relative.name
            write(path)
            self.client.log_artifact(self.run_id, str(path), str(relative.parent))

    def log_video(
        self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Logs ``videos/{name}_{step}.gif`` as an artifact; see :meth:`Logger.log_video`.

        Keyword Args:
            fps: frames per second. Defaults to ``video_fps``.
        """
        owner = "MLFlowLogger.log_video"
        check_name(owner, name)
        frames = video_frames(owner, video)
        fps = kwargs.get("fps", self.video_fps)
        self._log_file(
            name,
            check_step(owner, step),
            "videos",
            ".gif",
            lambda path: write_gif(owner, frames, path, fps),
        )

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Logs the hyperparameters as run params; see :meth:`Logger.log_hparams`."""
        from mlflow.entities import Param

        flat = flatten_hparams("MLFlowLogger.log_hparams", cfg)
        params = [Param(key, str(scalar_hparam(value))) for key, value in flat.items()]
        self.client.log_batch(self.run_id, params=params)

    def log_histogram(
        self, name: str, data: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Logs ``histograms/{name}_{step}.json`` as an artifact.

        Keyword Args:
            bins: the number of equal-width bins. Defaults to 64.
        """
        owner = "MLFlowLogger.log_histogram"
        check_name(owner, name)
        flat = histogram_data(owner, data)
        bins = kwargs.get("bins", 64)
        if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
            raise ValueError(f"{owner}: bins must be a positive int, got {bins!r}.")
        counts, edges = torch.histogram(flat, bins=bins)
        step = check_step(owner, step)
        record = {"step": step, "bin_edges": edges.tolist(), "counts": counts.long().tolist()}
        self._log_file(
            name,
            step,
            "histograms",
            ".json",
            lambda path: path.write_text(json.dumps(record), encoding="utf-8"),
        )

    def close(self) -> None:
        """Marks the run finished."""
        self.client.set_terminated(self.run_id)
