import sys
import time
from functools import partial

import pytest
import torch

from rl_collectors.distributed import DistributedSyncCollector, submitit_delayed_launcher
from rl_core.testing import CountingEnv

submitit = pytest.importorskip(
    "submitit", reason='needs submitit: pip install "rl-collectors[submitit]"'
)
cloudpickle = pytest.importorskip("cloudpickle")
# The jobs unpickle what they run: this file's functions travel by value (a child cannot
# import a test module).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

make = partial(CountingEnv, max_count=4, batch_size=[2])


def wait_done(jobs, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not all(job.done() for job in jobs) and time.monotonic() < deadline:
        time.sleep(0.1)
    return all(job.done() for job in jobs)


@pytest.mark.slow  # each job is a fresh interpreter (tens of seconds on 2 loaded cores)
def test_submitit_local_executor_runs_the_collector_nodes(tmp_path):
    collector = DistributedSyncCollector(
        [make, make],
        None,
        frames_per_batch=8,
        total_frames=16,
        launcher="submitit",
        submitit_cluster="local",
        submitit_folder=tmp_path,
        timeout=300.0,
    )
    try:
        sizes = [batch.batch_size for batch in collector]
    finally:
        collector.shutdown()
    assert sizes == [torch.Size([4, 2])] * 2
    assert wait_done([node.job for node in collector._nodes])


def trainer_main():
    collector = DistributedSyncCollector(
        [make, make], None, frames_per_batch=8, total_frames=16, launcher="submitit_delayed"
    )
    try:
        return [tuple(batch.batch_size) for batch in collector]
    finally:
        collector.shutdown()


@pytest.mark.slow
def test_delayed_launcher_submits_the_nodes_once_the_trainer_listens(tmp_path):
    launcher = submitit_delayed_launcher(2, cluster="local", folder=tmp_path, timeout=300.0)
    main_job = launcher(trainer_main)()
    try:
        assert main_job.result() == [(4, 2), (4, 2)]
    finally:
        for job in [main_job, *launcher.node_jobs]:
            if not job.done():
                job.cancel()
    assert wait_done(launcher.node_jobs)


def test_delayed_launcher_arguments():
    with pytest.raises(ValueError, match="expected num_jobs as an int >= 1, got 0"):
        submitit_delayed_launcher(0)
    with pytest.raises(ValueError, match="expected framework 'distributed', got 'rpc'"):
        submitit_delayed_launcher(2, framework="rpc")
    with pytest.raises(RuntimeError, match="runs inside a function decorated with"):
        DistributedSyncCollector([make], None, frames_per_batch=8, launcher="submitit_delayed")
