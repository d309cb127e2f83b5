"""ImaginedEnv propagating Gaussian beliefs through a toy model computed by hand."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core import check_env_specs
from rl_envs.model_based import ImaginedEnv

gym = pytest.importorskip("gymnasium")


class Linear(torch.nn.Module):
    """mean' = A mean + b action; var' = A var A^T + 0.1 I (a linear-Gaussian model)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.tensor([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])

    def forward(self, action, mean, var):
        next_mean = mean @ self.a.T + action.sum(-1, keepdim=True) * torch.tensor([0.0, 1.0, 0.0])
        return next_mean, self.a @ var @ self.a.T + 0.1 * torch.eye(3)


def _model() -> TensorDictModule:
    return TensorDictModule(
        Linear(),
        ["action", ("observation", "mean"), ("observation", "var")],
        [("next", "observation", "mean"), ("next", "observation", "var")],
    )


@pytest.fixture
def pendulum():
    from rl_envs import GymEnv

    return GymEnv("Pendulum-v1")


def test_beliefs_follow_the_model_from_a_point_start(pendulum):
    env = ImaginedEnv(_model(), pendulum)
    start = env.reset(TensorDict(observation=torch.tensor([[1.0, 2.0, 3.0]]), batch_size=[1]))
    assert start["observation", "mean"].tolist() == [[1.0, 2.0, 3.0]]
    assert start["observation", "var"].abs().sum() == 0

    def policy(td):
        return td.set("action", torch.ones(1, 1))

    traj = env.rollout(2, policy, tensordict=start, auto_reset=False)
    # step 1: mean [1 + 1, 2 + 1, 6] = [2, 3, 6]; var 0.1 I
    # step 2: mean [2 + 1.5, 3 + 1, 12] = [3.5, 4, 12]; var A (0.1 I) A^T + 0.1 I
    means = traj["next", "observation", "mean"][0]
    assert means.tolist() == [[2.0, 3.0, 6.0], [3.5, 4.0, 12.0]]
    a = Linear().a
    expected = 0.1 * a @ a.T + 0.1 * torch.eye(3)
    torch.testing.assert_close(traj["next", "observation", "var"][0, 1], expected)
    assert traj["next", "reward"].abs().sum() == 0
    assert not traj["next", "done"].any()


def test_specs_and_random_starts(pendulum):
    env = ImaginedEnv(_model(), pendulum, batch_size=[4])
    assert env.observation_spec["observation", "var"].shape == (4, 3, 3)
    reset = env.reset()
    assert reset["observation", "mean"].shape == (4, 3)
    check_env_specs(env)


def test_a_model_without_the_next_belief_is_refused(pendulum):
    wrong = TensorDictModule(
        lambda m: m, [("observation", "mean")], [("next", "observation", "loc")]
    )
    env = ImaginedEnv(wrong, pendulum)
    with pytest.raises(ValueError, match="expected the world model to write the next belief"):
        env.rollout(1)
