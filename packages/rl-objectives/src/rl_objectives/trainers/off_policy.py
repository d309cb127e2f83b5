"""Trainers of off-policy algorithms: :class:`OffPolicyTrainer` and its SAC, DQN, DDPG, TD3,
IQL and CQL defaults."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_objectives.target_updaters import TargetNetUpdater
from rl_objectives.trainers.hooks.replay_buffer import ReplayBufferTrainer
from rl_objectives.trainers.hooks.target_net import TargetNetUpdaterHook
from rl_objectives.trainers.hooks.update_weights import UpdateWeights
from rl_objectives.trainers.trainer import Trainer


class OffPolicyTrainer(Trainer):
    """Stores each collected batch in a replay buffer and trains on samples from it.

    Built from ready parts, it registers, in order:

    * :class:`~rl_objectives.trainers.ReplayBufferTrainer`: the batch's valid steps are
      added to ``replay_buffer`` (flattened), each optimisation step trains on a sample of
      ``batch_size`` transitions, and a prioritized buffer gets the loss's priorities back;
    * :class:`~rl_objectives.trainers.TargetNetUpdaterHook` when ``target_net_updater`` is
      given (``SoftUpdate``/``HardUpdate``), stepped after each optimisation step;
    * :class:`~rl_objectives.trainers.UpdateWeights` when the collector has
      ``update_policy_weights_``.

    ``optim_steps_per_batch`` is the update-to-data knob: optimisation steps per collected
    batch. The buffer's state, the target updater's counter and everything
    :class:`~rl_objectives.trainers.Trainer` saves go into the trainer's checkpoints.

    Args:
        collector: an iterable of TensorDict batches.
        total_frames: frames to train on.
        loss_module: the off-policy loss (``SACLoss``, ``DQNLoss``, ...).
        optimizer: the optimizer of its parameters (``None``: register your own
            :class:`~rl_objectives.trainers.OptimizerHook` s, e.g. one per actor/critic).

    Keyword Args:
        replay_buffer: anything with ``extend`` and ``sample`` (rl-buffers'
            ``TensorDictReplayBuffer``).
        batch_size: transitions per sample; ``None`` samples the buffer's own batch size.
        target_net_updater: the loss's target-network updater, or ``None``.
        **kwargs: the :class:`~rl_objectives.trainers.Trainer`'s keyword arguments.

    Raises:
        TypeError: ``replay_buffer`` lacks ``extend``/``sample``; ``target_net_updater`` is
            not a ``TargetNetUpdater``.
    """

    def __init__(
        self,
        collector: Iterable[TensorDictBase],
        total_frames: int,
        loss_module: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        replay_buffer: Any,
        batch_size: int | None = None,
        target_net_updater: TargetNetUpdater | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(collector, total_frames, loss_module, optimizer, **kwargs)
        self.replay_buffer = replay_buffer
        ReplayBufferTrainer(replay_buffer, batch_size, flatten_tensordicts=True).register(self)
        if target_net_updater is not None:
            TargetNetUpdaterHook(target_net_updater).register(self)
        if callable(getattr(collector, "update_policy_weights_", None)):
            UpdateWeights(collector).register(self)


class SACTrainer(OffPolicyTrainer):
    """:class:`OffPolicyTrainer` for the SAC family (``SACLoss``, ``DiscreteSACLoss``,
    ``REDQLoss``, ``CrossQLoss``, ``TQCLoss``)."""


class DQNTrainer(OffPolicyTrainer):
    """:class:`OffPolicyTrainer` for ``DQNLoss`` and ``DistributionalDQNLoss`` (give a
    ``HardUpdate`` or ``SoftUpdate`` as ``target_net_updater``)."""


class DDPGTrainer(OffPolicyTrainer):
    """:class:`OffPolicyTrainer` for ``DDPGLoss``."""


class TD3Trainer(OffPolicyTrainer):
    """:class:`OffPolicyTrainer` for ``TD3Loss`` (the loss delays its actor updates)."""


class IQLTrainer(OffPolicyTrainer):
    """:class:`OffPolicyTrainer` for ``IQLLoss``/``DiscreteIQLLoss``; with an offline
    dataset, see :class:`~rl_objectives.trainers.OfflineToOnlineTrainer`."""


class CQLTrainer(OffPolicyTrainer):
    """:class:`OffPolicyTrainer` for ``CQLLoss``/``DiscreteCQLLoss``; with an offline
    dataset, see :class:`~rl_objectives.trainers.OfflineToOnlineTrainer`."""
