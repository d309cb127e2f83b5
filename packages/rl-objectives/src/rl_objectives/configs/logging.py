"""Hydra configs of the loggers besides CSV and TensorBoard (TorchRL's ``configs.logging``):
partial, called with ``log_dir=`` (the run directory)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rl_objectives.configs._derive import MISSING


def wandb_logger(
    log_dir: str, exp_name: str = "logs", *, offline: bool = False, **kwargs: Any
) -> Any:
    """``WandbLoggerConfig``'s target: a :class:`rl_objectives.loggers.WandbLogger` saving
    under ``log_dir`` (its ``save_dir``)."""
    from rl_objectives.loggers import WandbLogger

    return WandbLogger(exp_name, offline=offline, save_dir=log_dir, **kwargs)


@dataclass
class LoggerConfig:
    """The base of the logger configs: ``_target_`` names a logger; partial (called with
    ``log_dir=``)."""

    exp_name: str = "logs"
    _target_: str = MISSING
    _partial_: bool = True


@dataclass
class WandbLoggerConfig(LoggerConfig):
    """:class:`rl_objectives.loggers.WandbLogger` (``rl-objectives[wandb]``); ``offline``
    writes the run under the run directory only."""

    offline: bool = False
    project: str | None = None
    id: str | None = None
    video_fps: int = 30
    _target_: str = "rl_objectives.configs.logging.wandb_logger"
