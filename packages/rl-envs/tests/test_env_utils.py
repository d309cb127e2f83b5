"""make_tensordict: a zeroed full-step TensorDict of an env (TorchRL's env utility)."""

import pytest
import torch

from rl_core import StepCounter, TransformedEnv
from rl_core.testing import CountingEnv
from rl_envs import SerialEnv, make_tensordict


def test_zeros_with_the_entries_of_a_step_in_a_batched_env():
    env = TransformedEnv(CountingEnv(max_count=5, batch_size=[3]), StepCounter())
    td = make_tensordict(env)
    assert td.batch_size == (3,)
    assert set(td.keys(True, True)) == {
        "observation",
        "step_count",
        "action",
        "done",
        "terminated",
        "truncated",
        ("next", "observation"),
        ("next", "reward"),
        ("next", "step_count"),
        ("next", "done"),
        ("next", "terminated"),
        ("next", "truncated"),
    }
    assert td["action"].dtype == env.action_spec.dtype
    assert td["action"].shape == (3, 1)
    assert td["next", "step_count"].dtype == torch.int64
    assert all(not v.any() for v in td.values(True, True))


def test_the_policy_writes_the_action_and_serial_env():
    calls = []

    def policy(td):
        calls.append(td.batch_size)
        return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))

    env = SerialEnv(2, lambda: CountingEnv(max_count=5))
    try:
        td = make_tensordict(env, policy)
    finally:
        env.close()
    assert calls == [(2,)]
    assert td["next", "observation"].shape == (2, 1)
    assert not td["next", "observation"].any()


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="make_tensordict: expected an EnvBase as env, got str"):
        make_tensordict("CartPole-v1")
    with pytest.raises(TypeError, match="expected policy to be callable or None, got int"):
        make_tensordict(CountingEnv(), 3)
