"""TerminateTransform: a condition on the step's output ends episodes (TorchRL's semantics)."""

import pytest
import torch

from rl_core import TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs import SerialEnv
from rl_envs.transforms import TerminateTransform


def _ones(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def test_terminates_where_the_condition_holds():
    # CountingEnv counts 1, 2, 3, ... with action 1; its own end (10) is far away.
    env = TransformedEnv(
        CountingEnv(max_count=10), TerminateTransform(lambda td: td["observation"] >= 3)
    )
    check_env_specs(env)
    traj = env.rollout(20, _ones)
    assert traj["next", "observation"].squeeze(-1).tolist() == [1.0, 2.0, 3.0]
    assert traj["next", "terminated"].squeeze(-1).tolist() == [False, False, True]
    assert traj["next", "done"].squeeze(-1).tolist() == [False, False, True]
    assert not traj["next", "truncated"].any()


def test_batched_env_one_condition_per_sub_env():
    # sub-env i stops at count i + 2; the condition comes as (batch,) and broadcasts to (batch, 1)
    env = TransformedEnv(
        CountingEnv(max_count=10, batch_size=[3]),
        TerminateTransform(lambda td: td["observation"].squeeze(-1) >= torch.tensor([2, 3, 4])),
    )
    check_env_specs(env)
    traj = env.rollout(6, _ones, break_when_any_done=False)
    # a terminated sub-env is reset (count 0) and counts again
    expected = [
        [False, True] * 3,
        [False, False, True] * 2,
        [False, False, False, True, False, False],
    ]
    assert traj["next", "terminated"].squeeze(-1).tolist() == expected


def test_write_done_false_leaves_done_alone():
    env = TransformedEnv(
        CountingEnv(max_count=10), TerminateTransform(lambda td: True, write_done=False)
    )
    traj = env.rollout(3, _ones, break_when_any_done=False)
    assert traj["next", "terminated"].all()
    assert not traj["next", "done"].any()


def test_in_serial_env_sub_envs():
    env = SerialEnv(
        2,
        lambda: TransformedEnv(
            CountingEnv(max_count=10), TerminateTransform(lambda td: td["observation"] >= 2)
        ),
    )
    try:
        check_env_specs(env)
        traj = env.rollout(5, _ones)
    finally:
        env.close()
    assert traj.batch_size == (2, 2)
    assert traj["next", "terminated"].squeeze(-1).tolist() == [[False, True], [False, True]]


def test_bad_arguments_and_use_are_named():
    with pytest.raises(TypeError, match="TerminateTransform: expected a callable stop"):
        TerminateTransform(3)
    env = TransformedEnv(
        CountingEnv(max_count=10, batch_size=[2]),
        TerminateTransform(lambda td: torch.ones(5, dtype=torch.bool)),
    )
    with pytest.raises(ValueError, match=r"shape \(5,\), which does not broadcast"):
        env.rollout(2, _ones)
    with pytest.raises(RuntimeError, match="runs in a TransformedEnv"):
        TerminateTransform(lambda td: True)(env.reset())
