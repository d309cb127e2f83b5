"""ProfileConfig: the torch profiler over chosen workers and rollouts of a collector."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

__all__ = ["ProfileConfig"]

ACTIVITIES = {"cpu": "CPU", "cuda": "CUDA"}


@dataclass
class ProfileConfig:
    """What ``collector.enable_profile(...)`` profiles: ``num_rollouts`` batches (the first
    ``warmup_rollouts`` of them as the profiler's warm-up, not recorded) of each worker in
    ``workers``, with ``torch.profiler``.

    Each rollout is one ``torch.profiler`` step and is marked with a
    ``"collector_rollout"`` range. When the last rollout ends, the trace is exported as a
    Chrome trace to ``save_path`` (when given) and passed to ``on_trace_ready(profiler)``
    (when given; it runs where the worker runs, so it must be picklable for worker
    processes); the collector then runs unprofiled. ``save_path`` may hold ``{worker_idx}``;
    otherwise, when several workers are profiled, ``_worker{i}`` is added before the suffix.

    Attributes:
        workers: the worker indices to profile (multi-process collectors); a single-process
            collector is worker 0. Defaults to ``[0]``.
        num_rollouts: rollouts profiled, warm-up included. Defaults to 3.
        warmup_rollouts: rollouts run under the profiler but not recorded. Defaults to 1.
        save_path: where the Chrome trace is written; ``None`` writes none.
        activities: ``"cpu"`` and/or ``"cuda"``; defaults to ``["cpu"]``, plus ``"cuda"``
            where CUDA is available.
        record_shapes: record input shapes. Defaults to ``True``.
        profile_memory: record memory allocations. Defaults to ``False``.
        with_stack: record Python stacks. Defaults to ``False``.
        with_flops: estimate FLOPs. Defaults to ``False``.
        on_trace_ready: called with the profiler when the trace is ready.

    Raises:
        ValueError: a count or worker index that is not a non-negative int, warm-up rollouts
            not fewer than ``num_rollouts``, or an unknown activity.

    Examples:
        >>> from rl_collectors import ProfileConfig
        >>> config = ProfileConfig(workers=[0, 1], save_path="trace.json")
        >>> str(config.trace_path(1))
        'trace_worker1.json'
    """

    workers: list[int] = field(default_factory=lambda: [0])
    num_rollouts: int = 3
    warmup_rollouts: int = 1
    save_path: str | Path | None = None
    activities: list[str] | None = None
    record_shapes: bool = True
    profile_memory: bool = False
    with_stack: bool = False
    with_flops: bool = False
    on_trace_ready: Callable[[Any], None] | None = None

    def __post_init__(self) -> None:
        where = "ProfileConfig"
        self.workers = list(self.workers)
        for worker in self.workers:
            if not _is_count(worker, 0):
                raise ValueError(
                    f"{where}: expected workers as a list of ints >= 0, got {self.workers!r}."
                )
        if not _is_count(self.num_rollouts, 1):
            raise ValueError(
                f"{where}: expected num_rollouts as an int >= 1, got {self.num_rollouts!r}."
            )
        if not _is_count(self.warmup_rollouts, 0) or self.warmup_rollouts >= self.num_rollouts:
            raise ValueError(
                f"{where}: expected warmup_rollouts as an int in [0, num_rollouts="
                f"{self.num_rollouts}), got {self.warmup_rollouts!r}."
            )
        if self.activities is not None:
            unknown = [a for a in self.activities if a not in ACTIVITIES]
            if unknown:
                raise ValueError(
                    f"{where}: unknown activities {unknown}; expected some of {sorted(ACTIVITIES)}."
                )

    def trace_path(self, worker_idx: int) -> Path | None:
        """Where worker ``worker_idx``'s trace goes (``None`` when ``save_path`` is)."""
        if self.save_path is None:
            return None
        text = str(self.save_path)
        if "{worker_idx}" in text:
            return Path(text.format(worker_idx=worker_idx))
        path = Path(text)
        if len(self.workers) > 1:
            return path.with_name(f"{path.stem}_worker{worker_idx}{path.suffix}")
        return path

    def torch_activities(self) -> list[Any]:
        names = self.activities
        if names is None:
            names = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
        return [getattr(torch.profiler.ProfilerActivity, ACTIVITIES[n]) for n in names]


def _is_count(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


class RolloutProfiler:
    """Runs ``torch.profiler`` over a collector's next ``config.num_rollouts`` rollouts."""

    def __init__(self, config: ProfileConfig, worker_idx: int = 0) -> None:
        self.config = config
        self.worker_idx = worker_idx
        self.count = 0
        self.finished = False
        self._profiler: Any = None

    @contextlib.contextmanager
    def rollout(self) -> Iterator[None]:
        """Wraps one rollout: a profiler step while the profile lasts, nothing after."""
        if self.finished:
            yield
            return
        config = self.config
        if self._profiler is None:
            self._profiler = torch.profiler.profile(
                activities=config.torch_activities(),
                schedule=torch.profiler.schedule(
                    wait=0,
                    warmup=config.warmup_rollouts,
                    active=config.num_rollouts - config.warmup_rollouts,
                    repeat=1,
                ),
                on_trace_ready=self._ready,
                record_shapes=config.record_shapes,
                profile_memory=config.profile_memory,
                with_stack=config.with_stack,
                with_flops=config.with_flops,
            )
            self._profiler.start()
        with torch.profiler.record_function("collector_rollout"):
            yield
        self._profiler.step()
        self.count += 1
        if self.count >= config.num_rollouts:
            self._profiler.stop()
            self._profiler = None
            self.finished = True

    def _ready(self, profiler: Any) -> None:
        path = self.config.trace_path(self.worker_idx)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            profiler.export_chrome_trace(str(path))
        if self.config.on_trace_ready is not None:
            self.config.on_trace_ready(profiler)
