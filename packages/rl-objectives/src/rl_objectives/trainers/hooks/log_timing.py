"""Logs where training time goes: :class:`LogTiming`."""

from __future__ import annotations

import time
from typing import Any

from rl_objectives.trainers.hooks.common import TrainerHookBase


class LogTiming(TrainerHookBase):
    """Logs the seconds spent collecting and optimising, per batch or in total.

    Three ops time the loop with ``time.perf_counter``: ``"pre_optim_steps"`` marks the end
    of collecting a batch (the time since the previous batch was logged is collection:
    the collector's ``next`` and the ``batch_process`` ops), ``"post_steps"`` the end of
    optimising it, and ``"post_steps_log"`` returns ``{f"{prefix}/collect": ...,
    f"{prefix}/optim": ..., f"{prefix}/total": ...}``: the last batch's seconds
    (``percall=True``) or the sums since the start (``percall=False``).

    Args:
        prefix: the logged names' prefix. Defaults to ``"time"``.

    Keyword Args:
        percall: per-batch seconds (default) or running totals.
        log_pbar: show them on the progress bar. Defaults to ``False``.
    """

    def __init__(
        self, prefix: str = "time", *, percall: bool = True, log_pbar: bool = False
    ) -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"LogTiming: prefix must be a non-empty str, got {prefix!r}.")
        self.prefix = prefix
        self.percall = percall
        self.log_pbar = log_pbar
        self.collect_total = 0.0
        self.optim_total = 0.0
        self._last_collect = 0.0
        self._last_optim = 0.0
        self._mark: float | None = None

    def start(self) -> None:
        """Starts the clock (called at registration; call it again before a resumed run)."""
        self._mark = time.perf_counter()

    def end_collect(self) -> None:
        """Ends the collection interval."""
        now = time.perf_counter()
        self._last_collect = now - (self._mark if self._mark is not None else now)
        self.collect_total += self._last_collect
        self._mark = now

    def end_optim(self) -> None:
        """Ends the optimisation interval."""
        now = time.perf_counter()
        self._last_optim = now - (self._mark if self._mark is not None else now)
        self.optim_total += self._last_optim
        self._mark = now

    def log(self, batch: Any) -> dict[str, Any]:
        """The timings to log (and restarts the clock)."""
        collect, optim = (
            (self._last_collect, self._last_optim)
            if self.percall
            else (self.collect_total, self.optim_total)
        )
        out: dict[str, Any] = {
            f"{self.prefix}/collect": collect,
            f"{self.prefix}/optim": optim,
            f"{self.prefix}/total": collect + optim,
        }
        if self.log_pbar:
            out["log_pbar"] = True
        self._mark = time.perf_counter()
        return out

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the three ops; the totals are saved under ``name``."""
        trainer.register_op("pre_optim_steps", self.end_collect)
        trainer.register_op("post_steps", self.end_optim)
        trainer.register_op("post_steps_log", self.log)
        trainer.register_module(name or "log_timing", self)
        self.start()

    def state_dict(self) -> dict[str, Any]:
        """``{"collect_total": s, "optim_total": s}``."""
        return {"collect_total": self.collect_total, "optim_total": self.optim_total}
