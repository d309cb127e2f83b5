"""Ready-made trainer hooks; each attaches itself with ``hook.register(trainer)``."""

from rl_objectives.trainers.hooks.common import TrainerHookBase
from rl_objectives.trainers.hooks.count_frames import CountFramesLog
from rl_objectives.trainers.hooks.early_stopping import EarlyStopping
from rl_objectives.trainers.hooks.log_scalar import LogScalar
from rl_objectives.trainers.hooks.log_validation import LogValidationReward
from rl_objectives.trainers.hooks.replay_buffer import ReplayBufferTrainer
from rl_objectives.trainers.hooks.target_net import TargetNetUpdaterHook
from rl_objectives.trainers.hooks.update_weights import UpdateWeights

__all__ = [
    "TrainerHookBase",
    "ReplayBufferTrainer",
    "UpdateWeights",
    "LogScalar",
    "LogValidationReward",
    "CountFramesLog",
    "EarlyStopping",
    "TargetNetUpdaterHook",
]
