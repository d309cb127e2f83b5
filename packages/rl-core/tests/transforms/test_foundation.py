import pytest
import torch

from rl_core.envs import check_env_specs
from rl_core.testing import CountingEnv
from rl_core.transforms import (
    InitTracker,
    StepCounter,
    TransformedEnv,
)


def _ones(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def test_step_counter_counts_and_truncates():
    env = TransformedEnv(CountingEnv(max_count=100), StepCounter(max_steps=3))
    traj = env.rollout(10, _ones, break_when_any_done=False)
    assert traj["step_count"].squeeze(-1).tolist()[:7] == [0, 1, 2, 0, 1, 2, 0]
    assert traj["next", "truncated"].squeeze(-1).tolist()[:3] == [False, False, True]
    assert traj["next", "done"].squeeze(-1).tolist()[:3] == [False, False, True]
    assert not traj["next", "terminated"].any()
    check_env_specs(env)


def test_step_counter_arguments():
    with pytest.raises(ValueError, match=r"StepCounter: expected max_steps >= 1 or None, got 0"):
        StepCounter(max_steps=0)
    env = TransformedEnv(CountingEnv(), StepCounter())
    with pytest.raises(
        KeyError, match=r"StepCounter: expected 'step_count' in the TensorDict given to step"
    ):
        env.step(_ones(CountingEnv().reset()))


def test_zero_resets_follow_the_default_device():
    # With a default device set (a torch function mode), device=None means that device.
    from rl_core._accel.rows import zeros

    class Owner:
        pass

    owner = Owner()
    with torch.device("meta"):
        assert zeros(owner, (2, 1), torch.int64, None).device.type == "meta"
    assert zeros(owner, (2, 1), torch.int64, None).device.type == "cpu"
    assert zeros(owner, (2, 1), torch.int64, torch.device("meta")).device.type == "meta"


def test_init_tracker():
    env = TransformedEnv(CountingEnv(max_count=2), InitTracker())
    traj = env.rollout(4, _ones, break_when_any_done=False)
    assert traj["is_init"].squeeze(-1).tolist() == [True, False, True, False]
    check_env_specs(env)
