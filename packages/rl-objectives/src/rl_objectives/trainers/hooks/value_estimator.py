"""Computes advantages on each collected batch: :class:`ValueEstimatorHook`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_objectives.trainers.hooks.common import TrainerHookBase


class ValueEstimatorHook(TrainerHookBase):
    """Runs a value estimator (e.g. ``GAE``) on the whole batch at ``"pre_epoch"``.

    On-policy losses read advantages and value targets that depend on the whole trajectory;
    computing them once per epoch over the collected batch, before it is cut into
    mini-batches, gives every mini-batch the same targets. Runs under ``torch.no_grad()``.

    Args:
        value_estimator: a callable mapping a TensorDict to a TensorDict with the estimates
            (a ``ValueEstimatorBase`` such as ``GAE``, or ``loss_module.value_estimator``).

    Raises:
        TypeError: ``value_estimator`` is not callable, or does not return a TensorDict.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.trainers import ValueEstimatorHook
        >>> hook = ValueEstimatorHook(lambda td: td.set("advantage", td["r"] * 2))
        >>> print(hook(TensorDict(r=torch.ones(3), batch_size=[3]))["advantage"].tolist())
        [2.0, 2.0, 2.0]
    """

    def __init__(self, value_estimator: Callable[[TensorDictBase], TensorDictBase]) -> None:
        if not callable(value_estimator):
            raise TypeError(
                f"ValueEstimatorHook: value_estimator must be callable (e.g. GAE), got "
                f"{type(value_estimator).__name__}."
            )
        self.value_estimator = value_estimator

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        """Returns the batch with the estimator's entries."""
        with torch.no_grad():
            out = self.value_estimator(batch)
        if not isinstance(out, TensorDictBase):
            raise TypeError(
                f"ValueEstimatorHook: the value estimator must return a TensorDict, got "
                f"{type(out).__name__}."
            )
        return out

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers at ``"pre_epoch"`` (the estimator's parameters are the loss's: no state)."""
        trainer.register_op("pre_epoch", self)
