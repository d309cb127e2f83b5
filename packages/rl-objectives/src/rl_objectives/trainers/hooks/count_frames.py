"""Logs the number of frames collected so far: :class:`CountFramesLog`."""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase

from rl_objectives.trainers._utils import check_positive_int, count_frames
from rl_objectives.trainers.hooks.common import TrainerHookBase


class CountFramesLog(TrainerHookBase):
    """Counts the frames of every collected batch and logs the total as ``"n_frames"``.

    Registered at ``pre_steps_log``. A frame is a valid step (``("collector", "mask")``
    when present) times ``frame_skip``. The count is saved with the trainer.

    Keyword Args:
        frame_skip: frames per collected step. Defaults to 1.
        log_pbar: show the count on the progress bar. Defaults to ``False``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.trainers import CountFramesLog
        >>> hook = CountFramesLog(frame_skip=4)
        >>> hook(TensorDict(batch_size=[2, 5]))
        {'n_frames': 40, 'log_pbar': False}
    """

    def __init__(self, *, frame_skip: int = 1, log_pbar: bool = False) -> None:
        self.frame_skip = check_positive_int("CountFramesLog", "frame_skip", frame_skip)
        self.log_pbar = log_pbar
        self.frame_count = 0

    def __call__(self, batch: TensorDictBase) -> dict[str, Any]:
        """Adds the frames of ``batch``; returns ``{"n_frames": total, "log_pbar": ...}``."""
        self.frame_count += count_frames(batch) * self.frame_skip
        return {"n_frames": self.frame_count, "log_pbar": self.log_pbar}

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the hook at ``pre_steps_log`` and its count under ``name``."""
        trainer.register_op("pre_steps_log", self)
        trainer.register_module(name or "count_frames_log", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"frame_count": frames counted}``."""
        return {"frame_count": self.frame_count}
