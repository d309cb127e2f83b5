"""Timer: seconds of the env's steps and resets and of the policy between them."""

import time

import pytest
import torch

from rl_core import TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs import SerialEnv
from rl_envs.transforms import Timer

STEP, RESET, POLICY = 0.03, 0.02, 0.01


class _SlowCounter(CountingEnv):
    def _reset(self, tensordict, **kwargs):
        time.sleep(RESET)
        return super()._reset(tensordict, **kwargs)

    def _step(self, tensordict):
        time.sleep(STEP)
        return super()._step(tensordict)


def _slow_policy(td):
    time.sleep(POLICY)
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def test_times_of_steps_resets_and_policy_in_a_batched_env():
    env = TransformedEnv(_SlowCounter(max_count=100, batch_size=[2]), Timer())
    check_env_specs(env)
    traj = env.rollout(3, _slow_policy)
    nxt = traj["next"]
    for key in ("time_step", "time_policy", "time_reset"):
        assert nxt[key].shape == (2, 3)
        assert nxt[key].dtype == torch.get_default_dtype()
        assert nxt[key][0].equal(nxt[key][1])  # one measure for the batch
    assert (nxt["time_step"] >= STEP).all()
    assert (nxt["time_step"] < STEP + 1.0).all()
    assert (nxt["time_policy"] >= POLICY).all()
    assert (nxt["time_step"] < POLICY + STEP + 1).all()
    assert not nxt["time_reset"].any()
    # the reset's row (the root of the first step): the reset's time, no step, no policy
    assert (traj["time_reset"][:, 0] >= RESET).all()
    assert not traj["time_step"][:, 0].any()
    assert not traj["time_policy"][:, 0].any()


def test_custom_keys_in_serial_env_sub_envs():
    keys = ["t_step", "t_policy", "t_reset"]
    env = SerialEnv(2, lambda: TransformedEnv(_SlowCounter(max_count=100), Timer(out_keys=keys)))
    try:
        check_env_specs(env)
        traj = env.rollout(2, _slow_policy)
    finally:
        env.close()
    assert (traj["next", "t_step"] >= STEP).all()
    assert (traj["next", "t_policy"] >= POLICY).all()
    assert (traj["t_reset"][:, 0] >= RESET).all()


def test_bad_arguments_and_use_are_named():
    with pytest.raises(ValueError, match="Timer: expected three out_keys"):
        Timer(out_keys=["a", "b"])
    with pytest.raises(RuntimeError, match="runs in a TransformedEnv"):
        Timer()(CountingEnv().reset())
