"""replay_buffer= on every local collector: batches go to extend(), None is yielded, and the
buffer may keep what it is given (nothing the collector reuses is handed over)."""

from functools import partial

import pytest
import torch

from rl_collectors import (
    AsyncBatchedCollector,
    AsyncCollector,
    MultiAsyncCollector,
    MultiSyncCollector,
    SyncDataCollector,
)
from rl_core.testing import CountingEnv

make = partial(CountingEnv, max_count=5, batch_size=[2])


def count_up(td):
    return td.set("action", torch.ones(*td.shape, 1, dtype=torch.int64))


class KeepingBuffer:
    """Keeps the TensorDicts it is given (as a list storage does) and a copy of each."""

    def __init__(self):
        self.kept, self.copies = [], []

    def extend(self, td):
        self.kept.append(td)
        self.copies.append(td.clone())


BUILDERS = {
    "sync": lambda rb: SyncDataCollector(
        make(), count_up, frames_per_batch=8, total_frames=32, replay_buffer=rb
    ),
    "multi_sync": lambda rb: MultiSyncCollector(
        [make, make], count_up, frames_per_batch=8, total_frames=32, replay_buffer=rb
    ),
    "multi_async": lambda rb: MultiAsyncCollector(
        [make, make], count_up, frames_per_batch=8, total_frames=32, replay_buffer=rb
    ),
    "async": lambda rb: AsyncCollector(
        make, count_up, frames_per_batch=8, total_frames=32, replay_buffer=rb
    ),
    "async_batched": lambda rb: AsyncBatchedCollector(
        [make, make], policy=count_up, frames_per_batch=8, total_frames=32, replay_buffer=rb
    ),
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_batches_go_to_the_buffer_unaliased(name):
    buffer = KeepingBuffer()
    collector = BUILDERS[name](buffer)
    try:
        assert list(collector) == [None] * 4
    finally:
        collector.shutdown()
    assert sum(td.numel() for td in buffer.kept) == 32
    for kept, copy in zip(buffer.kept, buffer.copies):
        # Later batches did not overwrite what the buffer kept.
        assert (kept == copy).all()
        # The transitions are the env's: every step counts up by one.
        assert (kept["next", "observation"] == kept["observation"] + 1).all()
