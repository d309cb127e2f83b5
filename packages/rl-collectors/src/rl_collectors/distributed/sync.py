"""DistributedSyncCollector: every node collects its share of each batch, in step."""

from __future__ import annotations

from typing import Any

from rl_collectors.distributed.generic import DistributedCollector


class DistributedSyncCollector(DistributedCollector):
    """A ``DistributedCollector`` with ``sync=True``: each batch gathers
    ``frames_per_batch / N`` frames from every one of the N nodes, concatenated along the
    first dim; the nodes wait for the trainer between batches (on-policy training).

    Takes the arguments of ``DistributedCollector`` except ``sync``.
    """

    def __init__(self, create_env_fn: Any, policy: Any = None, **kwargs: Any) -> None:
        if "sync" in kwargs:
            raise TypeError(
                "DistributedSyncCollector: sync is always True here; use DistributedCollector "
                "for asynchronous collection."
            )
        super().__init__(create_env_fn, policy, sync=True, **kwargs)


__all__ = ["DistributedSyncCollector"]
