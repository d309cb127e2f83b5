import os
import signal
import time
from functools import partial

import pytest
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torch import nn

from rl_collectors import AsyncBatchedCollector
from rl_core.testing import CountingEnv


def bias_policy(bias=0.0):
    """action = bias (weight 0): CountingEnv adds the action to the count."""
    layer = nn.Linear(1, 1)
    nn.init.zeros_(layer.weight)
    nn.init.constant_(layer.bias, bias)
    return TensorDictModule(layer, in_keys=["observation"], out_keys=["action"])


def count_up(td):
    return td.set("action", torch.ones(*td.shape, 1, dtype=torch.int64))


class SlowEnv(CountingEnv):
    """Sleeps in each step (releasing the GIL, as a simulator in C would)."""

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        time.sleep(0.01)
        return super()._step(tensordict)


class FailingEnv(CountingEnv):
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise ValueError("FailingEnv: stepping fails")


def test_batches_interleave_envs_and_each_env_runs_in_order():
    collector = AsyncBatchedCollector(
        [partial(CountingEnv, max_count=3)] * 3,
        policy=count_up,
        frames_per_batch=12,
        total_frames=24,
    )
    batches = list(collector)
    collector.shutdown()
    assert [b.batch_size for b in batches] == [torch.Size([12])] * 2
    data = torch.cat(batches)
    for env in range(3):
        rows = data[data["env_index"] == env]
        obs, nxt = rows["observation"].squeeze(-1), rows["next", "observation"].squeeze(-1)
        done = rows["next", "done"].squeeze(-1)
        # Each env counts 0 -> 1 -> 2 -> 3 (done), then restarts from 0.
        assert (nxt == obs + 1).all()
        assert (done == (nxt == 3)).all()
        assert (obs[1:][~done[:-1]] == nxt[:-1][~done[:-1]]).all()
        assert (obs[1:][done[:-1]] == 0).all()


def test_the_server_batches_requests_of_several_envs():
    calls = []

    def policy(td):
        calls.append(td.batch_size[0])
        return count_up(td)

    collector = AsyncBatchedCollector(
        [partial(SlowEnv, max_count=100)] * 4,
        policy=policy,
        frames_per_batch=40,
        total_frames=40,
        min_batch_size=4,
        server_timeout=5.0,
    )
    (batch,) = list(collector)
    collector.shutdown()
    assert batch.batch_size == torch.Size([40])
    # Every env waits for its action, so each forward pass serves all four at once.
    assert set(calls) == {4}
    assert collector._server.batch_sizes[:10] == [4] * 10


def test_completed_trajectories_are_yielded_whole():
    collector = AsyncBatchedCollector(
        [partial(CountingEnv, max_count=3)] * 2,
        policy=count_up,
        frames_per_batch=1,
        total_frames=12,
        yield_completed_trajectories=True,
    )
    trajectories = list(collector)
    collector.shutdown()
    assert len(trajectories) == 4
    for traj in trajectories:
        assert traj.batch_size == torch.Size([3])
        assert traj["next", "observation"].squeeze(-1).tolist() == [1.0, 2.0, 3.0]
        assert traj["next", "done"].squeeze(-1).tolist() == [False, False, True]
        assert traj["env_index"].unique().numel() == 1


def test_weight_updates_change_the_actions_and_their_version():
    policy = bias_policy(0.0)
    collector = AsyncBatchedCollector(
        [partial(CountingEnv, max_count=1000)] * 2, policy=policy, frames_per_batch=4
    )
    first = collector.next()
    assert (first["action"] == 0).all()
    trained = TensorDict.from_module(bias_policy(1.0)).data
    collector.update_policy_weights_(trained)
    assert collector.policy_version == 1
    # Transitions queued before the update still carry version 0; later ones version 1.
    for _ in range(10):
        batch = collector.next()
    collector.shutdown()
    assert (batch["collector", "policy_version"] == 1).all()
    assert (batch["action"] == 1).all()
    assert ((first["collector", "policy_version"]) == 0).all()


def test_replay_buffer_is_extended_and_none_yielded():
    class ListBuffer:
        def __init__(self):
            self.items = []

        def extend(self, td):
            self.items.append(td)

    buffer = ListBuffer()
    collector = AsyncBatchedCollector(
        [CountingEnv] * 2, frames_per_batch=4, total_frames=8, replay_buffer=buffer
    )
    assert list(collector) == [None, None]
    collector.shutdown()
    assert [td.batch_size for td in buffer.items] == [torch.Size([4])] * 2


def test_env_and_policy_failures_are_raised_with_their_traceback():
    collector = AsyncBatchedCollector(
        [CountingEnv, FailingEnv], policy=count_up, frames_per_batch=4
    )
    with pytest.raises(RuntimeError, match=r"env 1 failed:(.|\n)*FailingEnv: stepping fails"):
        list(collector)
    with pytest.raises(RuntimeError, match="shut down"):
        collector.next()

    def broken(td):
        raise KeyError("broken policy")

    collector = AsyncBatchedCollector([CountingEnv], policy=broken, frames_per_batch=2)
    with pytest.raises(RuntimeError, match=r"the policy failed:(.|\n)*broken policy"):
        collector.next()


def test_bad_arguments():
    with pytest.raises(TypeError, match="list of env factories"):
        AsyncBatchedCollector(CountingEnv, frames_per_batch=2)
    with pytest.raises(TypeError, match="not both"):
        AsyncBatchedCollector(
            [CountingEnv], policy=count_up, policy_factory=lambda: count_up, frames_per_batch=2
        )
    with pytest.raises(ValueError, match="min_batch_size <= max_batch_size"):
        AsyncBatchedCollector(
            [CountingEnv] * 8, frames_per_batch=2, min_batch_size=8, max_batch_size=4
        )
    with pytest.raises(ValueError, match=r"min_batch_size <= the number of envs \(2\), got 3"):
        AsyncBatchedCollector([CountingEnv] * 2, frames_per_batch=2, min_batch_size=3)
    with pytest.raises(ValueError, match="one batch size"):
        AsyncBatchedCollector(
            [CountingEnv, partial(CountingEnv, batch_size=[2])], frames_per_batch=2
        )
    with pytest.raises(ValueError, match="needs unbatched envs"):
        AsyncBatchedCollector(
            [partial(CountingEnv, batch_size=[2])],
            frames_per_batch=2,
            yield_completed_trajectories=True,
        )
    with pytest.raises(ValueError, match="a list of 2 dicts"):
        AsyncBatchedCollector([CountingEnv] * 2, frames_per_batch=2, create_env_kwargs=[{}])


def test_a_slow_env_does_not_hold_up_the_others():
    class VerySlowEnv(CountingEnv):
        def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
            time.sleep(0.1)
            return super()._step(tensordict)

    calls = []

    def policy(td):
        calls.append(td.batch_size[0])
        return count_up(td)

    collector = AsyncBatchedCollector(
        [partial(CountingEnv, max_count=1000), partial(VerySlowEnv, max_count=1000)],
        policy=policy,
        frames_per_batch=40,
        total_frames=40,
        server_timeout=0.001,
    )
    (batch,) = list(collector)
    collector.shutdown()
    # The fast env's requests are served alone (a partial batch flushed after the timeout)
    # while the slow one sleeps, so most transitions are the fast env's.
    assert 1 in calls
    assert (batch["env_index"] == 0).sum() > (batch["env_index"] == 1).sum()


def check_counting(data, num_envs, max_count):
    """Each env's rows count 0 -> 1 -> ... -> max_count (done), then restart from 0."""
    for env in range(num_envs):
        rows = data[data["env_index"] == env]
        assert rows.numel()
        obs, nxt = rows["observation"].squeeze(-1), rows["next", "observation"].squeeze(-1)
        done = rows["next", "done"].squeeze(-1)
        assert (nxt == obs + 1).all()
        assert (done == (nxt == max_count)).all()
        assert (obs[1:][~done[:-1]] == nxt[:-1][~done[:-1]]).all()
        assert (obs[1:][done[:-1]] == 0).all()


def drain(batches, n):
    for _ in range(n):
        next(batches)


def test_env_processes_step_the_envs_and_a_killed_one_is_reported():
    collector = AsyncBatchedCollector(
        [partial(CountingEnv, max_count=3)] * 2,
        policy=count_up,
        frames_per_batch=8,
        env_backend="multiprocessing",
    )
    try:
        pids = [env.process.pid for env in collector.envs]
        assert len(set(pids)) == 2
        assert os.getpid() not in pids
        batches = iter(collector)
        check_counting(torch.cat([next(batches) for _ in range(2)]), 2, 3)
        os.kill(pids[0], signal.SIGKILL)  # an env process this collector started
        with pytest.raises(RuntimeError, match=r"(?s)env 0 failed.*died with exit code"):
            drain(batches, 100)
    finally:
        collector.shutdown()
    assert not any(env.process.is_alive() for env in collector.envs)


def test_backend_multiprocessing_seeds_and_draws_random_actions_in_the_env_processes():
    collector = AsyncBatchedCollector(
        [partial(CountingEnv, max_count=4)] * 2,
        frames_per_batch=8,
        total_frames=16,
        backend="multiprocessing",
    )
    assert collector.env_backend == "multiprocessing"
    assert isinstance(collector.set_seed(0), int)
    batches = list(collector)
    collector.shutdown()
    assert [b.batch_size for b in batches] == [torch.Size([8])] * 2
    data = torch.cat(batches)
    assert set(data["env_index"].tolist()) == {0, 1}
    steps = data["next", "observation"] - data["observation"]
    assert torch.equal(steps, data["action"].to(steps.dtype))  # CountingEnv adds the action


def test_env_process_errors_are_raised_with_their_traceback():
    collector = AsyncBatchedCollector(
        [partial(CountingEnv, max_count=3), FailingEnv],
        policy=count_up,
        frames_per_batch=4,
        env_backend="multiprocessing",
    )
    with pytest.raises(RuntimeError, match=r"(?s)env 1 failed.*FailingEnv: stepping fails"):
        list(collector)
    collector.shutdown()
    with pytest.raises(ValueError, match=r"env_backend \(or backend\) in"):
        AsyncBatchedCollector([CountingEnv], frames_per_batch=2, env_backend="ray")
    with pytest.raises(TypeError, match="expected env factories"):
        AsyncBatchedCollector([CountingEnv()], frames_per_batch=2, backend="multiprocessing")
