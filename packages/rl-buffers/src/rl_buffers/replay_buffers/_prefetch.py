"""Background sampling threads for ``prefetch=N``."""

from __future__ import annotations

import collections
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class Prefetcher:
    """Keeps up to ``depth`` batches being sampled in worker threads.

    ``next()`` returns the oldest batch (waiting for it if needed) and queues a new one, so
    the learner's compute overlaps with sampling. Torch releases the GIL in its kernels, so
    index reads and transforms run alongside the learner.

    Args:
        fn: the sampling function, called with no argument.
        depth: batches in flight.
    """

    def __init__(self, fn: Callable[[], Any], depth: int) -> None:
        self._fn = fn
        self._depth = depth
        self._pool: ThreadPoolExecutor | None = None
        self._queue: collections.deque[Future] = collections.deque()

    def next(self) -> Any:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self._depth, thread_name_prefix="rb")
        while len(self._queue) < self._depth:
            self._queue.append(self._pool.submit(self._fn))
        result = self._queue.popleft().result()
        self._queue.append(self._pool.submit(self._fn))
        return result

    def clear(self) -> None:
        """Waits for the batches in flight and drops them (after writes or a reset)."""
        while self._queue:
            future = self._queue.popleft()
            future.cancel() or future.exception()

    def shutdown(self) -> None:
        self.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __getstate__(self) -> dict[str, Any]:
        return {
            "_fn": self._fn,
            "_depth": self._depth,
            "_pool": None,
            "_queue": collections.deque(),
        }
