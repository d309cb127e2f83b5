"""rl_envs.testing's NestedCountingEnv and MultiKeyCountingEnv: nested specs, counts per level."""

import pytest
import torch

from rl_core import check_env_specs
from rl_envs.testing import (
    MultiKeyCountingEnv,
    MultiKeyCountingEnvPolicy,
    NestedCountingEnv,
    check_rollout_consistency_multikey_env,
    rand_reset,
)


def count_policy(env):
    spec = env.full_action_spec[env.action_key]
    return lambda td: td.set(env.action_key, spec.zero() + 1)


@pytest.mark.parametrize("batch_size", [[], [2]])
@pytest.mark.parametrize(
    "options",
    [{}, {"has_root_done": True}, {"nest_obs_action": False}, {"nest_done": False}],
)
def test_nested_counting_env_specs(batch_size, options):
    env = NestedCountingEnv(max_steps=2, nested_dim=3, batch_size=batch_size, **options)
    check_env_specs(env)
    traj = env.rollout(10, count_policy(env))
    assert traj.batch_size == (*batch_size, 3)


def test_nested_counting_env_layout():
    env = NestedCountingEnv(max_steps=2, nested_dim=4, has_root_done=True)
    assert env.action_key == ("data", "action")
    assert env.reward_key == ("data", "reward")
    assert ("data", "done") in env.done_keys
    assert "done" in env.done_keys
    traj = env.rollout(10, count_policy(env))
    assert traj["next", "data", "states"].shape == (3, 4, 1)
    assert traj["next", "data", "states"][:, :, 0].tolist() == [[1] * 4, [2] * 4, [3] * 4]
    assert traj["next", "data", "done"][:, 0, 0].tolist() == [False, False, True]
    assert traj["next", "done"].squeeze(-1).tolist() == [False, False, True]


def test_nested_counting_env_counts_the_largest_nested_action():
    env = NestedCountingEnv(max_steps=5, nested_dim=3)
    td = env.reset().set(("data", "action"), torch.tensor([[0], [1], [0]], dtype=torch.int8))
    assert env.step(td)["next", "data", "states"].squeeze(-1).tolist() == [1, 1, 1]


def test_multikey_counting_env_counts_each_level():
    env = MultiKeyCountingEnv(max_steps=2)
    check_env_specs(env)
    policy = MultiKeyCountingEnvPolicy(env.full_action_spec, deterministic=True)
    traj = env.rollout(10, policy)
    assert traj["next", "observation"][:, 0, 0, 0].tolist() == [1.0, 2.0, 3.0]
    assert traj["next", "nested_1", "observation"][:, :, 0].tolist() == [
        [1.0] * 3,
        [2.0] * 3,
        [3.0] * 3,
    ]
    assert traj["next", "nested_2", "observation"][:, :, 0].tolist() == [
        [1.0] * 2,
        [2.0] * 2,
        [3.0] * 2,
    ]
    assert traj["next", "reward"].squeeze(-1).tolist() == [1.0, 1.0, 1.0]
    assert traj["next", "nested_1", "gift"].shape == (3, 3, 1)
    assert traj["next", "done"].squeeze(-1).tolist() == [False, False, True]
    check_rollout_consistency_multikey_env(traj, max_steps=2)


def test_multikey_counting_env_random_policy_in_a_batch():
    torch.manual_seed(0)
    env = MultiKeyCountingEnv(max_steps=20, batch_size=[3])
    policy = MultiKeyCountingEnvPolicy(env.full_action_spec)
    traj = env.rollout(15, policy, break_when_any_done=False)
    check_rollout_consistency_multikey_env(traj, max_steps=20)


def test_multikey_consistency_check_names_the_broken_level():
    env = MultiKeyCountingEnv(max_steps=2)
    traj = env.rollout(10, MultiKeyCountingEnvPolicy(env.full_action_spec, deterministic=True))
    traj["next", "nested_1", "gift"] += 1
    with pytest.raises(AssertionError, match="nested_1: a counting action's reward is not 1"):
        check_rollout_consistency_multikey_env(traj, max_steps=2)


def test_multikey_policy_refuses_a_random_policy_that_does_not_count():
    env = MultiKeyCountingEnv()
    with pytest.raises(ValueError, match="count=False is deterministic"):
        MultiKeyCountingEnvPolicy(env.full_action_spec, count=False)


def test_rand_reset_sets_one_mask_per_done_level():
    torch.manual_seed(0)
    env = MultiKeyCountingEnv(batch_size=[4])
    td = rand_reset(env)
    assert set(td.keys(True, True)) == {"_reset", ("nested_1", "_reset"), ("nested_2", "_reset")}
    assert td["nested_1", "_reset"].shape == (4, 3, 1)
    assert td["nested_1"].batch_size == (4, 3)
    assert all(bool(td[key].any()) for key in td.keys(True, True))
