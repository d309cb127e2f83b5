"""rl-collectors over rl-envs: GymEnv, SerialEnv and ParallelEnv."""

import os
import subprocess
import sys
import time
from functools import partial

import pytest
import torch

from rl_collectors import (
    MultiaSyncDataCollector,
    MultiSyncDataCollector,
    SyncDataCollector,
    split_trajectories,
)
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
    got = got.exclude("collector")  # the collector's own entries (trajectory ids)
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
        assert split_trajectories(expected)["mask"].sum() == 60
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


def _descendants(pid: int) -> list[int]:
    """The processes under ``pid`` (Linux: /proc/<pid>/task/<pid>/children)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as file:
            children = [int(child) for child in file.read().split()]
    except FileNotFoundError:
        return []
    return [pid for child in children for pid in (child, *_descendants(child))]


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as file:
                if file.read().split(")")[-1].split()[0] != "Z":  # a zombie has ended
                    alive.append(pid)
        except FileNotFoundError:
            pass
    return alive


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _alive(pids)


def make_parallel_cartpole():
    return ParallelEnv(2, partial(GymEnv, "CartPole-v1"), mp_start_method="fork")


linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the process tree from /proc"
)


@linux_only
@pytest.mark.parametrize("cls", [MultiSyncDataCollector, MultiaSyncDataCollector])
def test_parallel_env_inside_multi_collector_workers(cls):
    # TorchRL's usual set-up: each collector worker steps a ParallelEnv of its own.
    # Processes earlier tests of this session left running (Ray, pools) are not the collector's.
    earlier = set(_descendants(os.getpid()))
    collector = cls([make_parallel_cartpole, make_parallel_cartpole], None, frames_per_batch=40)
    try:
        batches = [collector.next(), collector.next()]
        tree = [pid for pid in _descendants(os.getpid()) if pid not in earlier]
        # Two workers, each with two ParallelEnv processes of its own. The asynchronous
        # collector may serve its first batches from one worker while the other one's
        # ParallelEnv still starts: keep collecting until both are up (or time runs out).
        deadline = time.monotonic() + 60
        while len(_alive(tree)) < 6 and time.monotonic() < deadline:
            batches.append(collector.next())
            tree = [pid for pid in _descendants(os.getpid()) if pid not in earlier]
        assert len(_alive(tree)) >= 6
    finally:
        collector.shutdown()
    for batch in batches:
        # Within a batch, a step's next observation is the following step's observation
        # unless the sub-env ended and was reset in between.
        obs, next_obs = batch["observation"], batch["next", "observation"]
        done = batch["next", "done"].squeeze(-1)
        same = (next_obs[..., :-1, :] == obs[..., 1:, :]).all(-1)
        assert (same | done[..., :-1]).all()
    assert _wait_gone(tree, 5.0) == []


_ORPHAN_SCRIPT = """
import os, sys, time
from functools import partial
from rl_collectors import MultiSyncDataCollector
from rl_envs import GymEnv, ParallelEnv

def make():
    return ParallelEnv(2, partial(GymEnv, "CartPole-v1"), mp_start_method="fork")

if __name__ == "__main__":
    collector = MultiSyncDataCollector([make, make], None, frames_per_batch=40)
    collector.next()
    print("ready", flush=True)
    if sys.argv[1] == "wait":
        time.sleep(60)
    # "exit": the interpreter ends with the collector still open.
"""


@linux_only
@pytest.mark.parametrize("how", ["exits", "is killed"])
def test_workers_and_their_parallel_envs_end_with_the_parent(tmp_path, how):
    script = tmp_path / "collect.py"
    script.write_text(_ORPHAN_SCRIPT)
    parent = subprocess.Popen(
        [sys.executable, str(script), "exit" if how == "exits" else "wait"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout.readline().strip() == "ready"
        tree = _descendants(parent.pid)
        assert len(tree) >= 6  # two workers and their four ParallelEnv processes
        if how == "is killed":
            parent.kill()
        assert parent.wait(30) is not None
        assert _wait_gone(tree, 5.0) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
