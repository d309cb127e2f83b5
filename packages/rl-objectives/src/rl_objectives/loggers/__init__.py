"""Loggers with one interface: scalars, videos, hyperparameters and histograms of a run.

:class:`CSVLogger` needs nothing beyond the package's dependencies; the others import their
backend only when built (extras ``tensorboard``, ``wandb``, ``mlflow``).
"""

from rl_objectives.loggers.common import Logger
from rl_objectives.loggers.csv import CSVLogger
from rl_objectives.loggers.exp_name import generate_exp_name
from rl_objectives.loggers.mlflow import MLFlowLogger
from rl_objectives.loggers.tensorboard import TensorboardLogger
from rl_objectives.loggers.utils import LOGGER_KINDS, get_logger
from rl_objectives.loggers.wandb import WandbLogger

__all__ = [
    "Logger",
    "CSVLogger",
    "TensorboardLogger",
    "WandbLogger",
    "MLFlowLogger",
    "get_logger",
    "generate_exp_name",
    "LOGGER_KINDS",
]
