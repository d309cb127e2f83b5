"""Ready-made trainer hooks; each attaches itself with ``hook.register(trainer)``."""

from rl_objectives.trainers.hooks.batch_subsampler import BatchSubSampler
from rl_objectives.trainers.hooks.clear_cuda_cache import ClearCudaCache
from rl_objectives.trainers.hooks.common import TrainerHookBase
from rl_objectives.trainers.hooks.count_frames import CountFramesLog
from rl_objectives.trainers.hooks.early_stopping import EarlyStopping
from rl_objectives.trainers.hooks.log_scalar import LogScalar
from rl_objectives.trainers.hooks.log_timing import LogTiming
from rl_objectives.trainers.hooks.log_validation import LogValidationReward
from rl_objectives.trainers.hooks.lr_scheduler import LRSchedulerHook
from rl_objectives.trainers.hooks.mask import mask_batch
from rl_objectives.trainers.hooks.offline_to_online import (
    OfflineToOnlineAnnealHook,
    OfflineToOnlineReplayBufferHook,
)
from rl_objectives.trainers.hooks.optimization_stepper import (
    DefaultOptimizationStepper,
    MixedPrecisionOptimizationStepper,
    OptimizationStepper,
)
from rl_objectives.trainers.hooks.optimizer import OptimizerHook
from rl_objectives.trainers.hooks.replay_buffer import ReplayBufferTrainer
from rl_objectives.trainers.hooks.reward_normalizer import RewardNormalizer
from rl_objectives.trainers.hooks.run_checkpointer import RunCheckpointer
from rl_objectives.trainers.hooks.select_keys import SelectKeys
from rl_objectives.trainers.hooks.target_net import TargetNetUpdaterHook
from rl_objectives.trainers.hooks.update_weights import UpdateWeights
from rl_objectives.trainers.hooks.utdr import UTDRHook
from rl_objectives.trainers.hooks.value_estimator import ValueEstimatorHook

__all__ = [
    "OfflineToOnlineReplayBufferHook",
    "OfflineToOnlineAnnealHook",
    "OptimizationStepper",
    "DefaultOptimizationStepper",
    "MixedPrecisionOptimizationStepper",
    "TrainerHookBase",
    "ReplayBufferTrainer",
    "UpdateWeights",
    "LogScalar",
    "LogValidationReward",
    "CountFramesLog",
    "EarlyStopping",
    "TargetNetUpdaterHook",
    "OptimizerHook",
    "BatchSubSampler",
    "ClearCudaCache",
    "LRSchedulerHook",
    "LogTiming",
    "RewardNormalizer",
    "SelectKeys",
    "UTDRHook",
    "ValueEstimatorHook",
    "mask_batch",
    "RunCheckpointer",
]
