"""Builds a logger from its kind's name: :func:`get_logger`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rl_objectives.loggers.common import Logger

LOGGER_KINDS = ("csv", "tensorboard", "wandb", "mlflow")


def get_logger(logger_type: str, logger_name: str, experiment_name: str, **kwargs: Any) -> Logger:
    """Builds a logger of one of the kinds in :data:`LOGGER_KINDS`.

    ``logger_name`` is where the logs go: the parent folder for ``"csv"`` and
    ``"tensorboard"``, wandb's ``save_dir`` for ``"wandb"``, and a local folder turned into a
    ``file://`` tracking URI for ``"mlflow"``.

    Args:
        logger_type: ``"csv"``, ``"tensorboard"``, ``"wandb"`` or ``"mlflow"``.
        logger_name: the folder the logs go to.
        experiment_name: the experiment's (or run's) name.
        **kwargs: passed on to the logger's constructor.

    Returns:
        The logger.

    Raises:
        ValueError: an unknown ``logger_type``.

    Examples:
        >>> import tempfile
        >>> from rl_objectives.loggers import get_logger
        >>> logger = get_logger("csv", tempfile.mkdtemp(), "run")
        >>> print(logger.exp_name, type(logger).__name__)
        run CSVLogger
    """
    if logger_type == "csv":
        from rl_objectives.loggers.csv import CSVLogger

        return CSVLogger(experiment_name, log_dir=logger_name, **kwargs)
    if logger_type == "tensorboard":
        from rl_objectives.loggers.tensorboard import TensorboardLogger

        return TensorboardLogger(experiment_name, log_dir=logger_name, **kwargs)
    if logger_type == "wandb":
        from rl_objectives.loggers.wandb import WandbLogger

        return WandbLogger(experiment_name, save_dir=logger_name, **kwargs)
    if logger_type == "mlflow":
        from rl_objectives.loggers.mlflow import MLFlowLogger

        uri = Path(os.path.abspath(logger_name)).as_uri()
        return MLFlowLogger(experiment_name, tracking_uri=uri, **kwargs)
    raise ValueError(f"get_logger: logger_type must be one of {LOGGER_KINDS}, got {logger_type!r}.")
