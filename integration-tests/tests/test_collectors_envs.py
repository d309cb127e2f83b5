"""rl-collectors over rl-envs: GymEnv, SerialEnv and ParallelEnv."""

from functools import partial

import pytest
import torch

from rl_collectors import MultiSyncDataCollector, SyncDataCollector, split_trajectories
from rl_core.modules import MLP, QValueActor
from rl_envs import GymEnv, ParallelEnv, SerialEnv

pytest.importorskip("gymnasium")


def greedy_policy(env):
    torch.manual_seed(0)
    return QValueActor(MLP(in_features=4, out_features=2, num_cells=[16]), spec=env.action_spec)


def generic_loop(env, policy, steps):
    out, td = [], env.reset()
    with torch.no_grad():
        for _ in range(steps):
            td, nxt = env.step_and_maybe_reset(policy(td))
            out.append(td)
            td = nxt
    return torch.stack(out, -1)


def assert_same(got, expected):
    assert set(got.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        torch.testing.assert_close(got.get(key), expected.get(key), msg=str(key))


def test_gym_vector_env_batches_match_the_generic_loop():
    env = GymEnv("CartPole-v1", num_envs=4)
    policy = greedy_policy(env)
    env.set_seed(0)
    expected = generic_loop(env, policy, 60)
    env.set_seed(0)
    collector = SyncDataCollector(env, policy, frames_per_batch=80, total_frames=240)
    got = torch.cat(list(collector), -1)
    assert got.batch_size == torch.Size([4, 60])
    assert_same(got, expected)
    assert got["next", "done"].any()  # episodes ended and were reset inside the batches
    env.close()


def test_serial_env_collector_splits_trajectories():
    env = SerialEnv(2, partial(GymEnv, "CartPole-v1"))
    collector = SyncDataCollector(
        env, greedy_policy(env), frames_per_batch=100, split_trajs=True, set_truncated=True
    )
    batch = collector.next()
    assert batch["collector", "mask"].sum() == 100
    lengths = batch["collector", "mask"].sum(-1)
    last = batch["next", "done"][torch.arange(len(lengths)), lengths - 1]
    assert last.all()  # every split trajectory ends done (env done, or cut by the batch)
    collector.shutdown()
    env.close()


def test_parallel_env_collector():
    env = ParallelEnv(2, partial(GymEnv, "CartPole-v1"), mp_start_method="fork")
    try:
        env.set_seed(1)
        policy = greedy_policy(env)
        expected = generic_loop(env, policy, 30)
        env.set_seed(1)
        collector = SyncDataCollector(env, policy, frames_per_batch=60)
        assert_same(collector.next(), expected)
        assert split_trajectories(expected)["collector", "mask"].sum() == 60
    finally:
        env.close()


def test_multi_sync_collector_over_gym_envs():
    make = partial(GymEnv, "CartPole-v1", num_envs=2)
    policy = greedy_policy(make())
    collector = MultiSyncDataCollector([make, make], policy, frames_per_batch=40, total_frames=80)
    batches = list(collector)
    assert [b.batch_size for b in batches] == [torch.Size([2, 2, 10])] * 2
    assert batches[0]["action"].dtype == torch.int64  # TorchRL's dtype for a Discrete one-hot
    collector.shutdown()
