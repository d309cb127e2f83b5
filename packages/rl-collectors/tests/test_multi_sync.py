import os
import signal
import threading
import time
from functools import partial

import pytest
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torch import nn

from rl_collectors import MultiaSyncDataCollector, MultiSyncDataCollector
from rl_core.testing import CountingEnv

make = partial(CountingEnv, max_count=4, batch_size=[2])


class Threshold(nn.Module):
    """action = 1 when bias > 0.5: the weights alone decide the output."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs * 0 + self.bias > 0.5).long()


def threshold_policy():
    return TensorDictModule(Threshold(), in_keys=["observation"], out_keys=["action"])


class FailingEnv(CountingEnv):
    """Raises at its third step."""

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.steps = getattr(self, "steps", 0) + 1
        if self.steps == 3:
            raise ValueError("FailingEnv: the third step fails")
        return super()._step(tensordict)


def assert_all_exited(collector):
    for process in collector._procs:
        assert not process.is_alive()


def test_batches_gather_every_worker():
    collector = MultiSyncDataCollector(
        [make, make], None, frames_per_batch=16, total_frames=40, track_traj_ids=True
    )
    batches = list(collector)
    assert [b.batch_size for b in batches] == [torch.Size([2, 2, 4])] * 3
    assert collector._frames == 48
    ids = torch.cat([b["collector", "traj_ids"] for b in batches], -1)
    # Unique across workers: worker w's ids are w mod 2.
    assert (ids[0] % 2 == 0).all()
    assert (ids[1] % 2 == 1).all()
    assert (batches[0]["collector", "policy_version"] == 0).all()
    collector.shutdown()
    assert_all_exited(collector)


def test_weights_reach_every_worker():
    policy = threshold_policy()
    collector = MultiSyncDataCollector([make, make], policy, frames_per_batch=8)
    assert collector.next()["action"].sum() == 0
    with torch.no_grad():
        policy.module.bias.fill_(1.0)
    collector.update_policy_weights_()
    assert collector.policy_version == 1
    batch = collector.next()
    assert batch["action"].all()  # every worker's output changed
    assert (batch["collector", "policy_version"] == 1).all()
    collector.update_policy_weights_(TensorDict({"module": {"bias": -torch.ones(1)}}, []))
    assert collector.next()["action"].sum() == 0
    collector.shutdown()


def test_a_worker_error_surfaces_with_its_traceback():
    failing = partial(FailingEnv, batch_size=[2])
    collector = MultiSyncDataCollector([make, failing], None, frames_per_batch=8)
    collector.next()  # two steps per worker: the third fails in the next batch
    with pytest.raises(RuntimeError, match=r"worker 1 \(pid \d+\) failed:(.|\n)*third step fails"):
        collector.next()
    assert_all_exited(collector)


def test_a_killed_worker_raises_instead_of_hanging():
    collector = MultiSyncDataCollector([make, make], None, frames_per_batch=8)
    collector.next()
    os.kill(collector._procs[0].pid, signal.SIGKILL)
    collector._procs[0].join(5)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker 0 .* died with exit code -9"):
        collector.next()
    assert time.monotonic() - start < 15
    assert_all_exited(collector)


def test_state_dict_resume_gives_the_next_batch():
    def policy(td):
        return td.set("action", torch.randint(0, 2, td["observation"].shape))

    first = MultiSyncDataCollector([make, make], policy, frames_per_batch=8, trust_policy=True)
    first.next()
    state = first.state_dict()
    expected = first.next()
    first.shutdown()
    resumed = MultiSyncDataCollector([make, make], policy, frames_per_batch=8, trust_policy=True)
    resumed.load_state_dict(state)
    assert (resumed.next() == expected).all()
    assert resumed._frames == 16
    resumed.shutdown()


def test_seed_split_and_reset():
    collector = MultiSyncDataCollector(
        [make, make], None, frames_per_batch=16, split_trajs=True, reset_at_each_iter=True
    )
    assert collector.set_seed(10) == 12
    batch = collector.next()
    assert batch.batch_dims == 2
    assert batch["collector", "mask"].sum() == 16
    collector.reset()
    collector.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        collector.next()


def test_bad_arguments():
    with pytest.raises(TypeError, match="list of env factories"):
        MultiSyncDataCollector(make, None, frames_per_batch=8)
    with pytest.raises(ValueError, match="multiple of the 2 workers"):
        MultiSyncDataCollector([make, make], None, frames_per_batch=9)
    with pytest.raises(ValueError, match="unknown mp_start_method 'thread'"):
        MultiSyncDataCollector([make], None, frames_per_batch=8, mp_start_method="thread")
    collector = MultiSyncDataCollector([make], None, frames_per_batch=8)
    with pytest.raises(RuntimeError, match="no weights to share"):
        collector.update_policy_weights_()
    collector.shutdown()


def test_spawn_start_method_shares_weights():
    # Under spawn everything is pickled: torch and rl-core objects only (the test module is
    # not importable in the child).
    layer = nn.Linear(1, 1)
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    policy = TensorDictModule(layer, in_keys=["observation"], out_keys=["action"])
    collector = MultiSyncDataCollector(
        [make], policy, frames_per_batch=4, total_frames=8, mp_start_method="spawn"
    )
    batches = []
    for batch in collector:
        batches.append(batch)
        with torch.no_grad():
            layer.bias.fill_(1.0)
        collector.update_policy_weights_()
    assert [b.batch_size for b in batches] == [torch.Size([1, 2, 2])] * 2
    assert (batches[0]["action"] == 0).all()
    assert (batches[1]["action"] == 1).all()
    assert (batches[1]["collector", "policy_version"] == 1).all()
    collector.shutdown()
    assert_all_exited(collector)


class SlowEnv(CountingEnv):
    """Sleeps 50 ms a step: a batch of 400 steps takes 20 s."""

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        time.sleep(0.05)
        return super()._step(tensordict)


@pytest.mark.parametrize("cls", [MultiSyncDataCollector, MultiaSyncDataCollector])
def test_a_worker_killed_while_another_collects_is_reported_at_once(cls):
    slow = partial(SlowEnv, max_count=4, batch_size=[2])
    collector = cls([slow, make], None, frames_per_batch=1600)
    victim = collector._procs[1]
    killed = []

    def kill() -> None:
        os.kill(victim.pid, signal.SIGKILL)
        killed.append(time.monotonic())

    timer = threading.Timer(1.0, kill)
    timer.start()
    with pytest.raises(RuntimeError, match=r"worker 1 \(pid \d+\) died with exit code -9"):
        for _ in collector:  # worker 0 is 20 s from the end of its first batch
            pass
    timer.join()
    assert time.monotonic() - killed[0] < 3.0
    assert_all_exited(collector)


@pytest.mark.parametrize("cls", [MultiSyncDataCollector, MultiaSyncDataCollector])
def test_a_worker_failing_at_start_up_reports_its_own_error(cls):
    def bad_env():
        raise ValueError("bad_env: no such task 'CartPole-v99'")

    collector = cls([make, bad_env], None, frames_per_batch=8)
    collector._procs[1].join(30)  # it has failed and exited before anyone asks it anything
    with pytest.raises(RuntimeError, match=r"worker 1 \(pid \d+\) failed:(.|\n)*CartPole-v99"):
        collector.next()
    assert_all_exited(collector)


def test_a_bad_argument_failing_in_the_workers_is_reported_with_it():
    # 3 frames per worker for envs of batch size 2: each worker's collector refuses.
    collector = MultiSyncDataCollector([make, make], None, frames_per_batch=6)
    collector._procs[0].join(30)
    with pytest.raises(RuntimeError, match=r"worker 0 \(pid \d+\) failed:(.|\n)*multiple of"):
        collector.next()
    assert_all_exited(collector)


@pytest.mark.parametrize(
    ("cat_results", "shape"), [("stack", (2, 2, 4)), (None, (2, 2, 4)), (0, (4, 4)), (-1, (2, 8))]
)
def test_cat_results_joins_the_workers_batches(cat_results, shape):
    # 2 workers x 2 envs x 4 steps: stacked [worker, env, time], or concatenated along the
    # envs' dim (0) or time (-1), as TorchRL's cat_results; labels follow their frames
    collector = MultiSyncDataCollector(
        [make, make], None, frames_per_batch=16, total_frames=16, cat_results=cat_results
    )
    batch = next(iter(collector))
    collector.shutdown()
    assert batch.batch_size == shape
    ids = batch["collector", "traj_ids"]
    owner = torch.arange(2).repeat_interleave(2 if cat_results == 0 else 1)
    if cat_results == -1:  # [env, worker 0's 4 steps | worker 1's 4 steps]
        owner = torch.arange(2).repeat_interleave(4)
        assert (ids % 2 == owner.expand(2, 8)).all()
    elif cat_results == 0:  # rows: worker 0's 2 envs, then worker 1's
        assert (ids % 2 == owner.unsqueeze(-1)).all()
    else:
        assert (ids[0] % 2 == 0).all()
        assert (ids[1] % 2 == 1).all()
    assert (batch["collector", "policy_version"] == 0).all()


def test_create_env_kwargs_reach_each_workers_factory():
    # CountingEnv counts steps to max_count: worker 0's envs stop at 2, worker 1's at 3
    factory = partial(CountingEnv, batch_size=[2])
    collector = MultiSyncDataCollector(
        [factory, factory],
        None,
        frames_per_batch=24,
        total_frames=24,
        create_env_kwargs=[{"max_count": 2}, {"max_count": 3}],
    )
    batch = next(iter(collector))
    collector.shutdown()
    top = batch["next", "observation"].flatten(1).amax(1).squeeze(-1).tolist()
    assert top == [2, 3]
    shared = MultiSyncDataCollector(
        [factory], None, frames_per_batch=8, total_frames=8, create_env_kwargs={"max_count": 1}
    )
    assert next(iter(shared))["next", "observation"].max() == 1
    shared.shutdown()
    with pytest.raises(ValueError, match=r"one create_env_kwargs dict per worker \(2\), got 1"):
        MultiSyncDataCollector(
            [factory, factory], None, frames_per_batch=8, create_env_kwargs=[{"max_count": 1}]
        )
    with pytest.raises(ValueError, match="cat_results only applies to MultiSyncDataCollector"):
        MultiaSyncDataCollector([factory], None, frames_per_batch=8, cat_results=0)
    with pytest.raises(ValueError, match="expected cat_results to be 'stack', None or an int"):
        MultiSyncDataCollector([factory], None, frames_per_batch=8, cat_results="cat")
