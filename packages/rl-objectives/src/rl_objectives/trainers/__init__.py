"""The training loop (:class:`Trainer`) and its ready-made hooks."""

from rl_objectives.trainers.hooks import (
    CountFramesLog,
    EarlyStopping,
    LogScalar,
    LogValidationReward,
    ReplayBufferTrainer,
    TargetNetUpdaterHook,
    TrainerHookBase,
    UpdateWeights,
)
from rl_objectives.trainers.trainer import HOOK_POINTS, Trainer

__all__ = [
    "Trainer",
    "HOOK_POINTS",
    "TrainerHookBase",
    "ReplayBufferTrainer",
    "UpdateWeights",
    "LogScalar",
    "LogValidationReward",
    "CountFramesLog",
    "EarlyStopping",
    "TargetNetUpdaterHook",
]
