"""MultiaSyncDataCollector (``MultiAsyncCollector``): worker processes collect without waiting; batches come as ready."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from tensordict import TensorDictBase

from rl_collectors._multi import MultiCollectorBase


class MultiaSyncDataCollector(MultiCollectorBase):
    """Runs a ``SyncDataCollector`` in each worker process and yields whichever batch is ready.

    ``MultiAsyncCollector`` (TorchRL 0.14's name) is the same class.

    Every worker collects ``frames_per_batch`` frames per batch and starts its next batch as
    soon as the parent has copied the last one out of shared memory, so collection goes on
    while the caller trains. Batches are ``[*env.batch_size, T]`` with
    ``("collector", "policy_version")`` (the weights that produced them: a worker loads newly
    published weights at the start of its next batch, so a batch in flight during
    ``update_policy_weights_()`` still carries the old version). Errors, weights and the
    other arguments are as in ``MultiSyncDataCollector``.

    Examples:
        >>> from functools import partial
        >>> from rl_core.testing import CountingEnv
        >>> from rl_collectors import MultiaSyncDataCollector
        >>> make = partial(CountingEnv, max_count=4, batch_size=[2])
        >>> collector = MultiaSyncDataCollector([make, make], None, frames_per_batch=10, total_frames=40)
        >>> [batch.batch_size for batch in collector]
        [torch.Size([2, 5]), torch.Size([2, 5]), torch.Size([2, 5]), torch.Size([2, 5])]
        >>> collector.shutdown()
    """

    def _wanted(self) -> bool:
        in_flight = sum(self._busy) * self.frames_per_batch
        return self.total_frames < 0 or self._frames + in_flight < self.total_frames

    def __iter__(self) -> Iterator[TensorDictBase | None]:
        for i in range(self.num_workers):
            if not self._busy[i] and self._wanted():
                self._send(i, "collect")
        while any(self._busy):
            self._check_open("__iter__")
            i = self._wait_any([i for i, busy in enumerate(self._busy) if busy])
            batch = self._take(i, self._reply(i)).clone()
            self._frames += self.frames_per_batch
            self._iter += 1
            if self._wanted():
                self._send(i, "collect")
            self._label(batch, torch.tensor(self._versions[i]), torch.tensor(i))
            yield self._finish(batch)


MultiAsyncCollector = MultiaSyncDataCollector

__all__ = ["MultiAsyncCollector", "MultiaSyncDataCollector"]
