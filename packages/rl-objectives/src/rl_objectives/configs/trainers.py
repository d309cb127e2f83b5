"""Hydra configs of the algorithm trainers that rl-train's presets do not use (TorchRL's
``configs.trainers``): partial, called with the collector, the total frames, the loss and the
optimizer (and, off policy, the replay buffer and the target updater); and the configs of
DreamerV3's optimizer, learner stepper and update ratio."""

from __future__ import annotations

from dataclasses import dataclass

from rl_objectives.configs._derive import MISSING, config_of
from rl_objectives.trainers import (
    DreamerV3OptimizationStepper,
    DreamerV3Optimizer,
    DreamerV3UpdateRatio,
)


@dataclass
class TrainerConfig:
    """The base of the trainer configs: the :class:`rl_objectives.trainers.Trainer` settings
    every trainer takes; ``_target_`` names the trainer; partial."""

    clip_norm: float | None = None
    clip_grad_norm: bool = True
    log_interval: int = 1
    frame_skip: int = 1
    _target_: str = MISSING
    _partial_: bool = True


@dataclass
class OnPolicyTrainerConfig(TrainerConfig):
    """:class:`rl_objectives.trainers.OnPolicyTrainer`: ``num_epochs`` passes over each batch
    in minibatches of ``batch_size`` (None: the whole batch)."""

    num_epochs: int = 1
    batch_size: int | None = None
    _target_: str = "rl_objectives.trainers.OnPolicyTrainer"


@dataclass
class ReinforceTrainerConfig(OnPolicyTrainerConfig):
    """:class:`rl_objectives.trainers.ReinforceTrainer`."""

    _target_: str = "rl_objectives.trainers.ReinforceTrainer"


@dataclass
class _OffPolicyTrainerConfig(TrainerConfig):
    batch_size: int = 256
    optim_steps_per_batch: int = 1


@dataclass
class DDPGTrainerConfig(_OffPolicyTrainerConfig):
    """:class:`rl_objectives.trainers.DDPGTrainer` (called with the replay buffer and the target
    updater too)."""

    _target_: str = "rl_objectives.trainers.DDPGTrainer"


@dataclass
class TD3TrainerConfig(_OffPolicyTrainerConfig):
    """:class:`rl_objectives.trainers.TD3Trainer` (called with the replay buffer and the target
    updater too)."""

    _target_: str = "rl_objectives.trainers.TD3Trainer"


@dataclass
class IQLTrainerConfig(_OffPolicyTrainerConfig):
    """:class:`rl_objectives.trainers.IQLTrainer` (called with the replay buffer and the target
    updater too)."""

    _target_: str = "rl_objectives.trainers.IQLTrainer"


@dataclass
class CQLTrainerConfig(_OffPolicyTrainerConfig):
    """:class:`rl_objectives.trainers.CQLTrainer` (called with the replay buffer and the target
    updater too)."""

    _target_: str = "rl_objectives.trainers.CQLTrainer"


@dataclass
class OfflineToOnlineTrainerConfig(_OffPolicyTrainerConfig):
    """:class:`rl_objectives.trainers.OfflineToOnlineTrainer`: ``offline_steps`` (mandatory)
    steps on the offline buffer first (called with ``offline_buffer=`` and the replay buffer
    too)."""

    offline_steps: int = MISSING  # type: ignore[assignment]
    _target_: str = "rl_objectives.trainers.OfflineToOnlineTrainer"


#: :class:`rl_objectives.trainers.DreamerV3Optimizer`, partial: called with the parameters.
DreamerV3OptimizerConfig = config_of(
    DreamerV3Optimizer, "DreamerV3OptimizerConfig", "rl_objectives.trainers.DreamerV3Optimizer",
    partial=True,
    doc=":class:`rl_objectives.trainers.DreamerV3Optimizer` (fields: its settings); partial: "
    "called with the parameters.",
)  # fmt: skip
#: :class:`rl_objectives.trainers.DreamerV3OptimizationStepper`, partial: called with the loss,
#: the optimizer and the target updater.
DreamerV3OptimizationStepperConfig = config_of(
    DreamerV3OptimizationStepper, "DreamerV3OptimizationStepperConfig",
    "rl_objectives.trainers.DreamerV3OptimizationStepper", partial=True,
    skip=("target_updater",),
    doc=":class:`rl_objectives.trainers.DreamerV3OptimizationStepper` (fields: its keyword "
    "settings); partial: called with the loss, the optimizer and the target updater.",
)  # fmt: skip
#: :class:`rl_objectives.trainers.DreamerV3UpdateRatio`: ``ratio`` is mandatory.
DreamerV3UpdateRatioConfig = config_of(
    DreamerV3UpdateRatio, "DreamerV3UpdateRatioConfig",
    "rl_objectives.trainers.DreamerV3UpdateRatio",
    doc=":class:`rl_objectives.trainers.DreamerV3UpdateRatio`: learner updates per driver "
    "record (``ratio``, mandatory).",
)  # fmt: skip
