"""MultiAction: chunks of actions executed in one step, rewards and observations stacked."""

import pytest
import torch

from rl_core import StepCounter, TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs import PendulumEnv
from rl_envs.transforms import MultiAction


def test_executes_each_action_of_the_chunk_and_stacks_rewards():
    env = TransformedEnv(PendulumEnv(batch_size=[2]), MultiAction())
    check_env_specs(env)
    assert env.full_action_spec["action"].shape == (2, 1, 1)
    assert env.reward_spec.shape == (2, 1, 1)
    env.set_seed(0)
    td = env.reset()
    chunk = torch.tensor([[[1.0], [-2.0], [0.5]], [[0.0], [2.0], [-1.0]]])
    out = env.step(td.set("action", chunk))["next"]
    # Reference: the plain env stepped three times with the chunk's actions.
    plain = PendulumEnv(batch_size=[2])
    plain.set_seed(0)
    ref = plain.reset()
    rewards = []
    for i in range(3):
        ref = plain.step(ref.set("action", chunk[:, i]))
        rewards.append(ref["next", "reward"])
        ref = plain.step_mdp_plan()(ref)
    assert torch.allclose(out["observation"], ref["observation"])
    assert out["reward"].shape == (2, 3, 1)
    assert torch.allclose(out["reward"], torch.stack(rewards, 1))


def test_stops_at_episode_end_and_stacks_observations():
    base = TransformedEnv(CountingEnv(max_count=100, batch_size=[2]), StepCounter(max_steps=4))
    env = TransformedEnv(base, MultiAction(stack_observations=True))
    check_env_specs(env)
    ones = torch.ones(2, 3, 1, dtype=torch.int64)
    traj = env.rollout(2, lambda td: td.set("action", ones), break_when_any_done=False)
    # Step 1: counts 1, 2, 3. Step 2: count 4 ends the episode (max_steps=4), the rest dropped.
    assert traj["next", "observation"][0, 0].squeeze(-1).tolist() == [1.0, 2.0, 3.0]
    assert traj["next", "observation"][0, 1].squeeze(-1).tolist() == [4.0, 4.0, 4.0]
    assert traj["next", "reward"][0, 1].squeeze(-1).tolist() == [1.0, 0.0, 0.0]
    assert traj["next", "done"][:, 1].all()


def test_last_reward_only_and_chunk_key():
    env = TransformedEnv(
        CountingEnv(max_count=100, batch_size=[2]),
        MultiAction(stack_rewards=False, action_key="action", chunk_key="plan"),
    )
    check_env_specs(env)
    assert list(env.full_action_spec.keys()) == ["plan"]
    td = env.reset().set("plan", torch.tensor([[[1], [0]], [[1], [1]]]))
    out = env.step(td)["next"]
    assert out["observation"].squeeze(-1).tolist() == [1.0, 2.0]
    assert out["reward"].shape == (2, 1)
    with pytest.raises(ValueError, match="MultiAction: expected dim >= 1"):
        MultiAction(dim=0)
    with pytest.raises(ValueError, match="chunk_key needs the action_key"):
        MultiAction(chunk_key="plan")
