"""Logs the update-to-data ratio: :class:`UTDRHook`."""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase

from rl_objectives.trainers._utils import count_frames
from rl_objectives.trainers.hooks.common import TrainerHookBase


class UTDRHook(TrainerHookBase):
    """Logs ``utd_ratio``: the samples the loss has trained on per collected frame.

    Its ``post_optim_log`` op counts the valid steps of every sub-batch the loss saw; its
    ``post_steps_log`` op returns ``{"utd_ratio": trained samples / trainer.collected_frames}``
    (0 before any frame). A replay-buffer trainer sampling 256 transitions once per 64
    collected frames logs 4.0. The count is saved with the trainer.

    Args:
        trainer: the trainer whose collected frames it divides by.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.trainers import UTDRHook
        >>> class T:
        ...     collected_frames = 64
        >>> hook = UTDRHook(T())
        >>> hook.count_samples(TensorDict(x=torch.zeros(256), batch_size=[256]))
        >>> print(hook.log(None))
        {'utd_ratio': 4.0}
    """

    def __init__(self, trainer: Any) -> None:
        if not hasattr(trainer, "collected_frames"):
            raise TypeError(
                f"UTDRHook: trainer must be a Trainer (with collected_frames), got "
                f"{type(trainer).__name__}."
            )
        self.trainer = trainer
        self.trained_samples = 0

    def count_samples(self, sub_batch: TensorDictBase) -> None:
        """Adds the valid steps of ``sub_batch`` to the trained-sample count."""
        self.trained_samples += count_frames(sub_batch)

    def log(self, batch: Any) -> dict[str, float]:
        """``{"utd_ratio": trained samples / collected frames}``."""
        frames = self.trainer.collected_frames
        return {"utd_ratio": self.trained_samples / frames if frames else 0.0}

    def register(self, trainer: Any = None, name: str | None = None) -> None:
        """Registers the count at ``"post_optim_log"``, the log at ``"post_steps_log"``."""
        trainer = self.trainer if trainer is None else trainer
        trainer.register_op("post_optim_log", self.count_samples)
        trainer.register_op("post_steps_log", self.log)
        trainer.register_module(name or "utdr", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"trained_samples": count}``."""
        return {"trained_samples": self.trained_samples}
