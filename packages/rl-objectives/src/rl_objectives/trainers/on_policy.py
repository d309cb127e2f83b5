"""Trainers of on-policy algorithms: :class:`OnPolicyTrainer` and its PPO, A2C and REINFORCE
defaults."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_objectives.trainers._minibatches import EpochMinibatches
from rl_objectives.trainers._utils import check_positive_int
from rl_objectives.trainers.hooks.update_weights import UpdateWeights
from rl_objectives.trainers.hooks.value_estimator import ValueEstimatorHook
from rl_objectives.trainers.trainer import Trainer

_FROM_LOSS = "loss"


class OnPolicyTrainer(Trainer):
    """Trains on each collected batch for ``num_epochs`` passes of shuffled mini-batches.

    Built from ready parts (a collector, a loss, an optimizer), it registers, in order:

    * a :class:`~rl_objectives.trainers.ValueEstimatorHook` at ``"pre_epoch"``: advantages
      and value targets for the whole batch, recomputed with the current critic before each
      epoch (the loss module's ``value_estimator`` unless ``value_estimator`` says otherwise);
    * the mini-batch sampler: each epoch visits every valid step once, in a fresh random
      order, ``batch_size`` steps per optimisation step (``None``: the whole batch, one step);
    * :class:`~rl_objectives.trainers.UpdateWeights` when the collector has
      ``update_policy_weights_`` (workers holding a copy of the policy).

    Args:
        collector: an iterable of TensorDict batches (``[*batch, T]``).
        total_frames: frames to train on.
        loss_module: the on-policy loss (``ClipPPOLoss``, ``A2CLoss``, ...).
        optimizer: the optimizer of its parameters (``None``: register your own
            :class:`~rl_objectives.trainers.OptimizerHook`).

    Keyword Args:
        num_epochs: passes over each batch. Defaults to 4.
        batch_size: steps per mini-batch; ``None`` trains on the whole batch at once.
        value_estimator: a callable adding advantages to a batch, ``None`` for none (the loss
            computes its own), or ``"loss"`` (default): the loss module's
            ``value_estimator`` when it has one.
        **kwargs: the :class:`~rl_objectives.trainers.Trainer`'s keyword arguments
            (``logger``, ``clip_norm``, ``seed``, ``save_trainer_file``, ...), except
            ``optim_steps_per_batch`` (the mini-batch count).

    Raises:
        ValueError: a ``batch_size`` that is not a positive int or ``None``.
        TypeError: a ``value_estimator`` that is not callable.
    """

    default_num_epochs = 4

    def __init__(
        self,
        collector: Iterable[TensorDictBase],
        total_frames: int,
        loss_module: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        num_epochs: int | None = None,
        batch_size: int | None = None,
        value_estimator: Callable[[TensorDictBase], TensorDictBase] | str | None = _FROM_LOSS,
        **kwargs: Any,
    ) -> None:
        owner = type(self).__name__
        if "optim_steps_per_batch" in kwargs:
            raise TypeError(
                f"{owner}: optim_steps_per_batch is set by batch_size (one step per "
                f"mini-batch); pass batch_size= instead."
            )
        if batch_size is not None:
            check_positive_int(owner, "batch_size", batch_size)
        super().__init__(
            collector,
            total_frames,
            loss_module,
            optimizer,
            num_epochs=self.default_num_epochs if num_epochs is None else num_epochs,
            **kwargs,
        )
        if isinstance(value_estimator, str):
            if value_estimator != _FROM_LOSS:
                raise ValueError(
                    f"{owner}: value_estimator must be a callable, None or 'loss', got "
                    f"{value_estimator!r}."
                )
            value_estimator = getattr(loss_module, "value_estimator", None)
        if value_estimator is not None:
            ValueEstimatorHook(value_estimator).register(self)
        self.minibatches = EpochMinibatches(batch_size)
        self.register_op("pre_epoch", self.minibatches.start_epoch)
        self.register_op("process_optim_batch", self.minibatches.next)
        if callable(getattr(collector, "update_policy_weights_", None)):
            UpdateWeights(collector).register(self)

    def steps_per_epoch(self, batch: TensorDictBase) -> int:
        """Mini-batches per epoch: ``ceil(valid steps / batch_size)``."""
        return self.minibatches.steps(batch)


class PPOTrainer(OnPolicyTrainer):
    """:class:`OnPolicyTrainer` for PPO losses (``ClipPPOLoss``, ``KLPENPPOLoss``, ``PPOLoss``):
    4 epochs of mini-batches per batch by default."""

    default_num_epochs = 4


class A2CTrainer(OnPolicyTrainer):
    """:class:`OnPolicyTrainer` for ``A2CLoss``: one pass per batch by default (give
    ``batch_size`` to split it)."""

    default_num_epochs = 1


class ReinforceTrainer(OnPolicyTrainer):
    """:class:`OnPolicyTrainer` for ``ReinforceLoss``: one pass per batch by default."""

    default_num_epochs = 1
