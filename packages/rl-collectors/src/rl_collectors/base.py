"""BaseCollector: what every collector of this package offers, whatever runs the envs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tensordict import TensorDictBase

from rl_collectors.profiling import ProfileConfig


class BaseCollector:
    """The contract of a data collector: iterate to get batches, update the policy's weights,
    seed, reset, save and restore, shut down.

    Subclasses implement ``__iter__`` (a batch, or ``None`` when a replay buffer takes it)
    and the control methods below; ``next()`` is derived. ``DataCollectorBase`` (TorchRL's older
    name) is the same class.

    Examples:
        >>> from rl_collectors import BaseCollector, Collector, MultiSyncCollector
        >>> issubclass(Collector, BaseCollector) and issubclass(MultiSyncCollector, BaseCollector)
        True
    """

    _iterator: Iterator[TensorDictBase | None] | None = None

    def __iter__(self) -> Iterator[TensorDictBase | None]:
        raise NotImplementedError(f"{type(self).__name__} does not implement __iter__.")

    def next(self) -> TensorDictBase | None:
        """The next batch of the collector's own iterator (``StopIteration`` at the end).

        An error raised while collecting ends that iterator; the next call starts a new one.
        """
        if self._iterator is None:
            self._iterator = iter(self)
        try:
            return next(self._iterator)
        except StopIteration:
            raise
        except BaseException:
            self._iterator = None
            raise

    def update_policy_weights_(self, weights: Any = None) -> None:
        """Makes the policy that collects use ``weights`` (or the source policy's)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not implement update_policy_weights_."
        )

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds the envs; returns the seed for what comes next."""
        raise NotImplementedError(f"{type(self).__name__} does not implement set_seed.")

    def reset(self) -> None:
        """Resets the envs: the next batch starts from fresh episodes."""
        raise NotImplementedError(f"{type(self).__name__} does not implement reset.")

    def state_dict(self) -> dict[str, Any]:
        """What resumes the run."""
        raise NotImplementedError(f"{type(self).__name__} does not implement state_dict.")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what ``state_dict`` returned."""
        raise NotImplementedError(f"{type(self).__name__} does not implement load_state_dict.")

    def enable_profile(
        self,
        *,
        workers: list[int] | None = None,
        num_rollouts: int = 3,
        warmup_rollouts: int = 1,
        save_path: str | Path | None = None,
        activities: list[str] | None = None,
        record_shapes: bool = True,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        on_trace_ready: Callable[[Any], None] | None = None,
    ) -> ProfileConfig:
        """Profiles the next rollouts of the chosen workers with ``torch.profiler`` (see
        ``ProfileConfig`` for the arguments); returns the config."""
        config = ProfileConfig(
            workers=[0] if workers is None else workers,
            num_rollouts=num_rollouts,
            warmup_rollouts=warmup_rollouts,
            save_path=save_path,
            activities=activities,
            record_shapes=record_shapes,
            profile_memory=profile_memory,
            with_stack=with_stack,
            with_flops=with_flops,
            on_trace_ready=on_trace_ready,
        )
        self._apply_profile(config)
        return config

    def _apply_profile(self, config: ProfileConfig) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement enable_profile.")

    def shutdown(self) -> None:
        """Releases the envs and processes; idempotent."""
        raise NotImplementedError(f"{type(self).__name__} does not implement shutdown.")


DataCollectorBase = BaseCollector

__all__ = ["BaseCollector", "DataCollectorBase"]
