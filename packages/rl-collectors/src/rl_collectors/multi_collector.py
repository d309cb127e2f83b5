"""MultiCollector: TorchRL 0.14's one entry point to the multi-process collectors, sync or async
by argument, wrapping a ``MultiSyncCollector`` or a ``MultiAsyncCollector``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tensordict import TensorDictBase

from rl_collectors.base import BaseCollector
from rl_collectors.multi_async import MultiAsyncCollector
from rl_collectors.multi_sync import MultiSyncCollector
from rl_collectors.profiling import ProfileConfig
from rl_core import EnvBase


class MultiCollector(BaseCollector):
    """Runs one collector per worker process: ``sync=True`` yields a batch gathered from
    every worker (a ``MultiSyncCollector``), ``sync=False`` each worker's batch as it comes (a
    ``MultiAsyncCollector``).

    TorchRL 0.14's ``MultiCollector(..., sync=...)`` returns the sync or async class itself;
    here ``MultiCollector`` is a collector of its own that builds that class and hands every
    call to it (``collector`` is the wrapped one). Batches, weights, errors and shutdown are
    those of the wrapped collector.

    Args:
        create_env_fn: one env factory per worker, or a single factory with ``num_workers``.
        policy: as in ``MultiSyncCollector``.

    Keyword Args:
        sync: ``True`` (default) for ``MultiSyncCollector``'s batches, ``False`` for
            ``MultiAsyncCollector``'s.
        num_workers: the number of workers when ``create_env_fn`` is a single factory (if a
            list is given, its length must match).
        **kwargs: the keyword arguments of ``MultiSyncCollector`` / ``MultiAsyncCollector``
            (``frames_per_batch``, ``total_frames``, ``weight_sync_schemes``, ...).

    Raises:
        TypeError: ``sync`` is not a bool, or ``create_env_fn`` is neither a factory nor a list
            of factories.
        ValueError: ``num_workers`` missing for a single factory, below 1, or not the length
            of the list.

    Examples:
        >>> from functools import partial
        >>> from rl_core.testing import CountingEnv
        >>> from rl_collectors import MultiCollector
        >>> make = partial(CountingEnv, max_count=4, batch_size=[2])
        >>> collector = MultiCollector(make, None, num_workers=2, sync=False,
        ...     frames_per_batch=10, total_frames=20)
        >>> type(collector.collector).__name__, [b.batch_size for b in collector]
        ('MultiaSyncDataCollector', [torch.Size([2, 5]), torch.Size([2, 5])])
        >>> collector.shutdown()
    """

    def __init__(
        self,
        create_env_fn: Callable[[], EnvBase] | Sequence[Callable[[], EnvBase]],
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        sync: bool = True,
        num_workers: int | None = None,
        **kwargs: Any,
    ) -> None:
        where = type(self).__name__
        if not isinstance(sync, bool):
            raise TypeError(f"{where}: expected sync as a bool, got {type(sync).__name__}.")
        if num_workers is not None and (
            not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1
        ):
            raise ValueError(f"{where}: expected num_workers as an int >= 1, got {num_workers!r}.")
        if callable(create_env_fn) and not isinstance(create_env_fn, EnvBase):
            if num_workers is None:
                raise ValueError(
                    f"{where}: a single env factory needs num_workers= (how many worker "
                    f"processes run it); or pass one factory per worker as a list."
                )
            create_env_fn = [create_env_fn] * num_workers
        elif isinstance(create_env_fn, Sequence) and not isinstance(create_env_fn, str):
            if num_workers is not None and num_workers != len(create_env_fn):
                raise ValueError(
                    f"{where}: num_workers={num_workers} but create_env_fn lists "
                    f"{len(create_env_fn)} factories; pass one of them only."
                )
        else:
            raise TypeError(
                f"{where}: expected create_env_fn as an env factory or a list of them, got "
                f"{type(create_env_fn).__name__}."
            )
        self.sync = sync
        cls = MultiSyncCollector if sync else MultiAsyncCollector
        self.collector: MultiSyncCollector | MultiAsyncCollector = cls(
            list(create_env_fn), policy, **kwargs
        )

    # ------------------------------------------------------------------ what it wraps
    @property
    def num_workers(self) -> int:
        return self.collector.num_workers

    @property
    def frames_per_batch(self) -> int:
        return self.collector.frames_per_batch

    @property
    def total_frames(self) -> int:
        return self.collector.total_frames

    @property
    def policy(self) -> Any:
        return self.collector.policy

    @property
    def policy_version(self) -> int:
        return self.collector.policy_version

    @property
    def weight_sync_schemes(self) -> dict[str, Any]:
        return self.collector.weight_sync_schemes

    @property
    def weight_updater(self) -> Any:
        return self.collector.weight_updater

    # ------------------------------------------------------------------ collector API
    def __iter__(self) -> Iterator[TensorDictBase | None]:
        return iter(self.collector)

    def next(self) -> TensorDictBase | None:
        return self.collector.next()

    def update_policy_weights_(self, weights: Any = None, *, worker_ids: Any = None) -> None:
        self.collector.update_policy_weights_(weights, worker_ids=worker_ids)

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        return self.collector.set_seed(seed, static_seed)

    def reset(self) -> None:
        self.collector.reset()

    def state_dict(self) -> dict[str, Any]:
        return self.collector.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.collector.load_state_dict(state)

    def _apply_profile(self, config: ProfileConfig) -> None:
        self.collector._apply_profile(config)

    def shutdown(self) -> None:
        if hasattr(self, "collector"):
            self.collector.shutdown()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(sync={self.sync}, {self.num_workers} workers)"


__all__ = ["MultiCollector"]
