"""Ends training when a logged metric stops improving: :class:`EarlyStopping`."""

from __future__ import annotations

import math
from typing import Any

from rl_objectives.trainers._utils import check_positive_int
from rl_objectives.trainers.hooks.common import TrainerHookBase

_MODES = ("max", "min")


class EarlyStopping(TrainerHookBase):
    """Stops the trainer when the logged scalar ``monitor`` stalls or reaches a threshold.

    Registered at ``post_steps_log``, it reads ``trainer.latest_logs[monitor]`` whenever that
    value was logged in the current batch, so register it after the hook that logs the
    value (e.g. :class:`LogValidationReward` for ``"r_evaluation"``), or watch a loss that the
    trainer logs itself (``"loss_actor"``, ...). A check improves on the best value so far if
    it is larger (``mode="max"``) or smaller (``"min"``) by more than ``min_delta``. Training
    stops after ``patience`` checks in a row without improvement, or as soon as the value
    reaches ``threshold`` (``>=`` for ``"max"``, ``<=`` for ``"min"``). The best value and the
    count of checks without improvement are saved with the trainer.

    Args:
        monitor: the logged name to watch.

    Keyword Args:
        patience: checks without improvement before stopping; ``None`` to stop on the
            threshold only.
        mode: ``"max"`` (default) or ``"min"``.
        min_delta: the smallest change that counts as an improvement. Defaults to 0.
        threshold: stop once the value reaches it; ``None`` (default) never.

    Raises:
        ValueError: neither ``patience`` nor ``threshold``, an unknown mode, a negative
            ``min_delta``, or a ``patience`` that is not a positive int.

    Examples:
        >>> from rl_objectives.trainers import EarlyStopping
        >>> stopper = EarlyStopping("r_evaluation", patience=2)
        >>> [stopper.check(value) for value in (1.0, 2.0, 2.0, 1.5)]
        [False, False, False, True]
    """

    def __init__(
        self,
        monitor: str,
        *,
        patience: int | None = None,
        mode: str = "max",
        min_delta: float = 0.0,
        threshold: float | None = None,
    ) -> None:
        owner = "EarlyStopping"
        if patience is None and threshold is None:
            raise ValueError(f"{owner}: give a patience, a threshold or both; got neither.")
        if patience is not None:
            check_positive_int(owner, "patience", patience)
        if mode not in _MODES:
            raise ValueError(f"{owner}: mode must be one of {_MODES}, got {mode!r}.")
        if not min_delta >= 0:
            raise ValueError(f"{owner}: min_delta must be >= 0, got {min_delta!r}.")
        self.monitor = monitor
        self.patience = patience
        self.mode = mode
        self.min_delta = float(min_delta)
        self.threshold = threshold
        self.best = -math.inf if mode == "max" else math.inf
        self.bad_checks = 0
        self.last_checked_frame = -1
        self._trainer: Any = None

    def check(self, value: float) -> bool:
        """Records one value of the metric; returns whether training should stop."""
        sign = 1.0 if self.mode == "max" else -1.0
        if sign * (value - self.best) > self.min_delta:
            self.best = value
            self.bad_checks = 0
        else:
            self.bad_checks += 1
        if self.threshold is not None and sign * (value - self.threshold) >= 0:
            return True
        return self.patience is not None and self.bad_checks >= self.patience

    def __call__(self, batch: Any = None) -> None:
        """Checks the monitored value if it was logged in this batch; stops the trainer if due."""
        trainer = self._trainer
        if trainer is None:
            raise RuntimeError(
                "EarlyStopping: the hook reads the trainer's logged values; attach it with "
                "early_stopping.register(trainer) before training."
            )
        frame = trainer.latest_log_frames.get(self.monitor)
        if frame is None or frame != trainer.collected_frames:
            return
        if frame == self.last_checked_frame:
            return
        self.last_checked_frame = frame
        value = trainer.latest_logs[self.monitor]
        if self.check(value):
            trainer.stop(
                f"EarlyStopping: {self.monitor}={value:.6g} (best {self.best:.6g}, "
                f"{self.bad_checks} checks without improvement)"
            )

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the hook at ``post_steps_log`` and its state under ``name``."""
        self._trainer = trainer
        trainer.register_op("post_steps_log", self)
        trainer.register_module(name or "early_stopping", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"best", "bad_checks", "last_checked_frame"}``."""
        return {
            "best": self.best,
            "bad_checks": self.bad_checks,
            "last_checked_frame": self.last_checked_frame,
        }
