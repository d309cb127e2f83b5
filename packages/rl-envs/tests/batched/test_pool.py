import pytest
import torch
from tensordict import TensorDict

from rl_core.testing import CountingEnv
from rl_envs.batched import ParallelEnv, _pool, _worker


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
