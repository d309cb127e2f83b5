"""The interface every logger implements: :class:`Logger`."""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping
from typing import Any

import torch


class Logger(abc.ABC):
    """The base of the loggers: scalars, videos, hyperparameters and histograms of one run.

    A logger belongs to one experiment (``exp_name``) and writes under ``log_dir``. What a
    subclass writes: :meth:`_create_experiment` (returns the backend's run object, stored at
    ``self.experiment``), :meth:`log_scalar`, :meth:`log_video`, :meth:`log_hparams` and
    :meth:`log_histogram`; :meth:`close` flushes and releases the backend.

    ``step`` is the x-axis of a curve: trainers pass the number of frames collected so far.

    Args:
        exp_name: the experiment's name, a non-empty string.
        log_dir: where the backend writes.

    Raises:
        ValueError: ``exp_name`` is empty or not a string.
    """

    def __init__(self, exp_name: str, log_dir: str | os.PathLike) -> None:
        if not isinstance(exp_name, str) or not exp_name:
            raise ValueError(
                f"{type(self).__name__}: exp_name must be a non-empty string, got {exp_name!r}."
            )
        self.exp_name = exp_name
        self.log_dir = os.fspath(log_dir)
        self.experiment = self._create_experiment()

    @abc.abstractmethod
    def _create_experiment(self) -> Any:
        """Creates the backend's run (a writer, a run object, a directory)."""

    @abc.abstractmethod
    def log_scalar(self, name: str, value: float | torch.Tensor, step: int | None = None) -> None:
        """Logs one scalar.

        Args:
            name: the metric's name (``"train/reward"``).
            value: a real number or a one-element tensor.
            step: the x-axis value; ``None`` lets the backend count.
        """

    @abc.abstractmethod
    def log_video(
        self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Logs one video.

        Args:
            name: the video's name.
            video: ``[T, C, H, W]`` or ``[B, T, C, H, W]`` frames, ``uint8`` or floats in
                ``[0, 1]``, ``C`` in ``{1, 3, 4}``.
            step: the x-axis value.
            **kwargs: backend options (``fps``).
        """

    @abc.abstractmethod
    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Logs the run's hyperparameters; nested mappings are flattened to ``"a.b"`` names.

        Args:
            cfg: a mapping of hyperparameters.
        """

    @abc.abstractmethod
    def log_histogram(
        self, name: str, data: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Logs the distribution of the values of a tensor.

        Args:
            name: the histogram's name.
            data: any tensor or array of finite values.
            step: the x-axis value.
            **kwargs: backend options (``bins``).
        """

    def close(self) -> None:  # noqa: B027 - a no-op is right for backends with nothing to flush
        """Flushes what is buffered and releases the backend."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(exp_name={self.exp_name!r}, log_dir={self.log_dir!r})"
