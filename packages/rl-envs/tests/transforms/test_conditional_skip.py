"""ConditionalSkip: skipped sub-envs stay where they are; the env below steps only when needed."""

import pytest
import torch

from rl_core import StepCounter, TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs.transforms import ConditionalSkip, RewardScaling


class StepCountingEnv(CountingEnv):
    """CountingEnv that counts the calls of its step."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = 0

    def _step(self, tensordict):
        self.calls += 1
        return super()._step(tensordict)


def _ones(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def test_skips_every_other_step_without_stepping_the_env_below():
    base = StepCountingEnv(max_count=100)
    skipping = TransformedEnv(
        base, ConditionalSkip(lambda td: td["step_count"] % 2 == 1)
    ).append_transform(RewardScaling(loc=0.0, scale=10.0))
    env = TransformedEnv(skipping, StepCounter())  # counts every step, skipped or not
    check_env_specs(env)
    base.calls = 0
    traj = env.rollout(6, _ones)
    assert base.calls == 3
    assert traj["next", "observation"].squeeze(-1).tolist() == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    # Skipped rows bypass the transforms of their env: zero rewards, not scaled ones.
    assert traj["next", "reward"].squeeze(-1).tolist() == [10.0, 0.0] * 3
    assert traj["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3, 4, 5, 6]


def test_skips_some_sub_envs_of_a_batched_env():
    # Sub-env i is skipped once its count reaches threshold[i].
    base = StepCountingEnv(max_count=100, batch_size=[3])
    threshold = torch.tensor([[0.0], [2.0], [100.0]])
    env = TransformedEnv(
        base, ConditionalSkip(lambda td: (td["observation"] >= threshold).squeeze(-1))
    )
    check_env_specs(env)
    traj = env.rollout(4, _ones)
    obs = traj["next", "observation"].squeeze(-1).tolist()
    assert obs[0] == [0.0, 0.0, 0.0, 0.0]  # skipped from the start (count 0 >= 0)
    assert obs[1] == [1.0, 2.0, 2.0, 2.0]  # skipped once its count reaches 2
    assert obs[2] == [1.0, 2.0, 3.0, 4.0]  # never skipped
    assert traj["next", "reward"][0].eq(0).all()
    assert traj["next", "reward"][2].eq(1).all()
    base.calls = 0
    td = env.reset()
    td["observation"] = torch.full((3, 1), 200.0)
    env.step(_ones(td))  # every sub-env skipped: the env below is not stepped
    assert base.calls == 0


def test_errors():
    with pytest.raises(TypeError, match="ConditionalSkip: expected a callable cond"):
        ConditionalSkip(True)
    env = TransformedEnv(
        CountingEnv(batch_size=[2]), ConditionalSkip(lambda td: torch.ones(3, dtype=torch.bool))
    )
    with pytest.raises(ValueError, match="expected the env's batch shape"):
        env.step(_ones(env.reset()))
