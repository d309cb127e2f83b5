from functools import partial

import torch

from rl_collectors import aSyncDataCollector
from rl_core.testing import CountingEnv


def test_one_background_worker():
    collector = aSyncDataCollector(
        partial(CountingEnv, max_count=3, batch_size=[2]),
        None,
        frames_per_batch=6,
        total_frames=18,
    )
    batches = list(collector)
    assert [b.batch_size for b in batches] == [torch.Size([2, 3])] * 3
    assert collector.num_workers == 1
    collector.shutdown()
    assert not collector._procs[0].is_alive()
