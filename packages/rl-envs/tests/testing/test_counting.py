"""rl_envs.testing's counting envs: counts, done steps and partial resets as TorchRL's
torchrl.testing documents them (done once the count is above max_steps)."""

import pytest
import torch

from rl_core import check_env_specs
from rl_envs import SerialEnv
from rl_envs.testing import (
    CountingBatchedEnv,
    CountingEnv,
    CountingEnvCountModule,
    CountingEnvCountPolicy,
    IncrementingEnv,
)


def ones(batch=()):
    return lambda td: td.set("action", torch.ones(*batch, 1, dtype=torch.int8))


@pytest.mark.parametrize("batch_size", [[], [3]])
def test_counting_env_specs_and_counts(batch_size):
    env = CountingEnv(max_steps=3, batch_size=batch_size)
    check_env_specs(env)
    traj = env.rollout(10, ones(batch_size))
    # done once the count is above max_steps: 4 steps of +1
    assert traj["next", "observation"].reshape(-1, 4)[0].tolist() == [1, 2, 3, 4]
    assert traj["next", "done"].reshape(-1, 4)[0].tolist() == [False, False, False, True]
    assert traj["next", "reward"].abs().sum() == 0
    assert traj["observation"].dtype == torch.int32
    assert env.action_spec.dtype == torch.int8


def test_counting_env_start_val_and_zero_actions():
    env = CountingEnv(max_steps=10, start_val=4)
    traj = env.rollout(3, lambda td: td.set("action", torch.zeros(1, dtype=torch.int8)))
    assert traj["observation"].squeeze(-1).tolist() == [4, 4, 4]


def test_counting_env_partial_reset_resets_only_the_masked_rows():
    env = CountingEnv(max_steps=10, batch_size=[2])
    td = env.reset()
    for _ in range(3):
        td = env.step(ones([2])(td))["next"]
    assert env.count.squeeze(-1).tolist() == [3, 3]
    env.reset(td.set("_reset", torch.tensor([[True], [False]])))
    assert env.count.squeeze(-1).tolist() == [0, 3]


def test_counting_env_in_a_serial_env_resets_each_worker_at_its_done():
    env = SerialEnv(2, lambda: CountingEnv(max_steps=1))
    traj = env.rollout(5, ones([2]), break_when_any_done=False)
    assert traj["next", "observation"][0].squeeze(-1).tolist() == [1, 2, 1, 2, 1]


def test_incrementing_env_counts_whatever_the_action():
    env = IncrementingEnv(max_steps=2)
    check_env_specs(env)
    traj = env.rollout(10, lambda td: td.set("action", torch.zeros(1, dtype=torch.int8)))
    assert traj["next", "observation"].squeeze(-1).tolist() == [1, 2, 3]


def test_count_policy_and_module_write_ones():
    env = CountingEnv(batch_size=[2])
    policy = CountingEnvCountPolicy(env.action_spec, env.action_key)
    assert policy(env.reset())["action"].tolist() == [[1], [1]]
    assert CountingEnvCountModule(env.action_spec)(torch.zeros(2)).tolist() == [[1], [1]]
    with pytest.raises(TypeError, match="leaf spec, got a Composite"):
        CountingEnvCountPolicy(env.full_action_spec)


def test_counting_batched_env_has_a_limit_per_element():
    env = CountingBatchedEnv(
        max_steps=torch.tensor([1, 3]), start_val=torch.tensor([0, 1]), batch_size=[2]
    )
    check_env_specs(env)
    traj = env.rollout(4, ones([2]), break_when_any_done=False)
    # element 0: 1, 2 (done: 2 > 1), reset to 0, 1, 2; element 1 starts at 1: 2, 3, 4 (done)
    assert traj["next", "observation"].squeeze(-1).tolist() == [[1, 2, 1, 2], [2, 3, 4, 2]]
    assert traj["next", "done"].squeeze(-1).tolist() == [
        [False, True, False, True],
        [False, False, True, False],
    ]
    with pytest.raises(ValueError, match=r"max_steps of shape batch_size \(2,\), got shape \(3,\)"):
        CountingBatchedEnv(max_steps=torch.tensor([1, 2, 3]), batch_size=[2])


@pytest.mark.parametrize("auto_reset", [True, False])
def test_rollout_without_break_leaves_the_env_where_its_last_step_left_it(auto_reset):
    # TorchRL 0.14.1: CountingEnv(max_steps=4) rolled out 5 steps ends with count 5, done at
    # the last step and not reset after it; a rollout from there goes on counting.
    env = CountingEnv(max_steps=4)
    policy = CountingEnvCountPolicy(env.action_spec, env.action_key)
    start = None if auto_reset else env.reset()
    traj = env.rollout(
        5, policy, auto_reset=auto_reset, tensordict=start, break_when_any_done=False
    )
    assert traj["next", "done"].squeeze(-1).tolist() == [False] * 4 + [True]
    assert env.count.item() == 5
    root = env.step_mdp_plan()(traj[-1])
    more = env.rollout(2, policy, auto_reset=False, tensordict=root, break_when_any_done=False)
    assert more["next", "observation"].squeeze(-1).tolist() == [6, 1]
