import multiprocessing
import os

import pytest
import torch
from tensordict import TensorDict

from rl_core.testing import CountingEnv
from rl_envs.batched import ParallelEnv, _pool, _worker
from rl_envs.batched._common import read_frame

posix_only = pytest.mark.skipif(os.name != "posix", reason="pipes read as file descriptors")


@posix_only
@pytest.mark.parametrize("size", [0, 10, 70_000, 1_000_000])
def test_read_frame_reads_what_send_bytes_sent(size):
    reader, writer = multiprocessing.Pipe(duplex=False)
    payload = os.urandom(size)
    if size > 60_000:
        # A pipe holds 64 KiB: a large message needs a reader at the same time.
        process = multiprocessing.get_context("fork").Process(
            target=writer.send_bytes, args=(payload,)
        )
        process.start()
        assert read_frame(reader.fileno()) == payload
        process.join()
    else:
        writer.send_bytes(payload)
        assert read_frame(reader.fileno()) == payload
    writer.close()
    with pytest.raises(EOFError):
        read_frame(reader.fileno())
    reader.close()


def _rollout(env):
    env.set_seed(0)
    action = torch.ones(*env.batch_size, 1, dtype=torch.int64)
    return env.rollout(12, lambda td: td.set("action", action), break_when_any_done=False)


@pytest.mark.parametrize("mode", ["connection", "no_spin"])
def test_other_ways_of_waiting_give_the_same_rollouts(monkeypatch, mode):
    kwargs = {"create_env_kwargs": {"max_count": 5}}
    reference = ParallelEnv(2, CountingEnv, **kwargs)
    try:
        expected = _rollout(reference)
    finally:
        reference.close()
    if mode == "connection":
        monkeypatch.setattr(_pool, "_POSIX_PIPES", False)
    else:
        # Forked workers read the module as it is when they start.
        monkeypatch.setattr(_pool, "WAIT_SPIN_SECONDS", 0.0)
        monkeypatch.setattr(_pool, "SPIN_AFTER_REPLY_SECONDS", 0.0)
        monkeypatch.setattr(_worker, "WORKER_SPIN_SECONDS", 0.0)
    env = ParallelEnv(2, CountingEnv, timeout=30.0, **kwargs)
    try:
        with pytest.raises(RuntimeError, match=r"worker 0 raised RuntimeError while stepping"):
            env.rand_step(TensorDict(batch_size=env.batch_size))
        assert (_rollout(env) == expected).all()
    finally:
        env.close()
