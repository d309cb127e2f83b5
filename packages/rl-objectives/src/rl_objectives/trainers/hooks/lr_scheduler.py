"""Steps a learning-rate scheduler after each optimisation step: :class:`LRSchedulerHook`."""

from __future__ import annotations

from typing import Any

import torch

from rl_objectives.trainers.hooks.common import TrainerHookBase


class LRSchedulerHook(TrainerHookBase):
    """Calls ``lr_scheduler.step()`` at ``"post_optim"`` and logs the learning rate.

    Its ``post_optim_log`` op returns ``{"lr": ...}`` (the first parameter group's rate; one
    entry ``lr_{i}`` per group when there are several). The scheduler's state is saved with
    the trainer's, so a resumed run goes on with the same rate.

    Args:
        lr_scheduler: a ``torch.optim.lr_scheduler.LRScheduler`` (``StepLR``, ``LinearLR``,
            ...). Schedulers stepped on a metric (``ReduceLROnPlateau``) are not supported.

    Raises:
        TypeError: ``lr_scheduler`` is not an ``LRScheduler``.

    Examples:
        >>> import torch
        >>> from rl_objectives.trainers import LRSchedulerHook
        >>> opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(()))], lr=1.0)
        >>> hook = LRSchedulerHook(torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5))
        >>> for _ in range(4):
        ...     opt.step()
        ...     hook()
        >>> print(hook.log(None))
        {'lr': 0.25}
    """

    def __init__(self, lr_scheduler: torch.optim.lr_scheduler.LRScheduler) -> None:
        if not isinstance(lr_scheduler, torch.optim.lr_scheduler.LRScheduler):
            raise TypeError(
                f"LRSchedulerHook: lr_scheduler must be a torch.optim.lr_scheduler.LRScheduler, "
                f"got {type(lr_scheduler).__name__}."
            )
        self.lr_scheduler = lr_scheduler

    def __call__(self) -> None:
        """Steps the scheduler."""
        self.lr_scheduler.step()

    def log(self, batch: Any) -> dict[str, float]:
        """``{"lr": rate}``, or ``{"lr_0": ..., "lr_1": ...}`` with several groups."""
        rates = self.lr_scheduler.get_last_lr()
        if len(rates) == 1:
            return {"lr": float(rates[0])}
        return {f"lr_{i}": float(rate) for i, rate in enumerate(rates)}

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the step at ``"post_optim"``, the log at ``"post_optim_log"`` and its state."""
        trainer.register_op("post_optim", self)
        trainer.register_op("post_optim_log", self.log)
        trainer.register_module(name or "lr_scheduler", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"lr_scheduler": scheduler.state_dict()}``."""
        return {"lr_scheduler": self.lr_scheduler.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the scheduler's state."""
        self.lr_scheduler.load_state_dict(state_dict["lr_scheduler"])
