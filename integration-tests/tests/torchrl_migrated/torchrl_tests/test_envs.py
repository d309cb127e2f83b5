"""A custom env, step_mdp, rollouts and transforms, as a TorchRL user tests them."""

import pytest
import torch
from tensordict import TensorDict
from torchrl.data import Bounded, Composite, Unbounded
from torchrl.envs import EnvBase, RewardSum, StepCounter, TransformedEnv
from torchrl.envs.libs.gym import GymEnv
from torchrl.envs.utils import check_env_specs, step_mdp


class PointEnv(EnvBase):
    """A point on a line pushed by the action; it terminates past +/- 3."""

    def __init__(self, batch_size=(), seed=0):
        super().__init__(batch_size=torch.Size(batch_size))
        self.observation_spec = Composite(
            observation=Unbounded(shape=(*self.batch_size, 1)), shape=self.batch_size
        )
        self.action_spec = Bounded(-1.0, 1.0, shape=(*self.batch_size, 1))
        self.reward_spec = Unbounded(shape=(*self.batch_size, 1))
        self._set_seed(seed)

    def _reset(self, tensordict=None, **kwargs):
        position = torch.zeros(*self.batch_size, 1)
        return TensorDict({"observation": position}, batch_size=self.batch_size)

    def _step(self, tensordict):
        position = tensordict["observation"] + tensordict["action"]
        terminated = position.abs() > 3
        return TensorDict(
            {
                "observation": position,
                "reward": -position.abs(),
                "done": terminated.clone(),
                "terminated": terminated,
            },
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed):
        self.rng = torch.Generator().manual_seed(seed or 0)


@pytest.mark.parametrize("batch_size", [(), (4,)])
def test_check_env_specs(batch_size):
    check_env_specs(PointEnv(batch_size))


def test_rollout_with_policy():
    env = PointEnv((2,))

    def policy(td):
        return td.set("action", torch.ones(2, 1))

    rollout = env.rollout(10, policy)
    # 1, 2, 3, 4: the fourth step terminates and the rollout stops
    assert rollout.batch_size == (2, 4)
    torch.testing.assert_close(
        rollout["next", "observation"][0, :, 0], torch.tensor([1.0, 2.0, 3.0, 4.0])
    )
    assert rollout["next", "done"][:, -1].all()
    assert not rollout["next", "done"][:, :-1].any()


def test_step_mdp_moves_next_to_root():
    td = TensorDict(
        {
            "observation": torch.zeros(3, 1),
            "action": torch.ones(3, 1),
            "other": torch.zeros(3),
            "next": TensorDict(
                {
                    "observation": torch.ones(3, 1),
                    "reward": torch.ones(3, 1),
                    "done": torch.zeros(3, 1, dtype=torch.bool),
                    "terminated": torch.zeros(3, 1, dtype=torch.bool),
                },
                batch_size=[3],
            ),
        },
        batch_size=[3],
    )
    out = step_mdp(td)
    assert (out["observation"] == 1).all()
    assert "reward" not in out.keys()
    assert "action" not in out.keys()
    assert "other" in out.keys()
    assert "done" in out.keys()
    out = step_mdp(td, keep_other=False)
    assert "other" not in out.keys()


def test_transformed_env_counts_steps_and_sums_rewards():
    env = TransformedEnv(PointEnv(), StepCounter())
    env.append_transform(RewardSum())
    rollout = env.rollout(3, lambda td: td.set("action", torch.full((1,), 0.5)))
    assert rollout["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3]
    torch.testing.assert_close(
        rollout["next", "episode_reward"].squeeze(-1), torch.tensor([-0.5, -1.5, -3.0])
    )


def test_gym_pendulum_rollout():
    env = GymEnv("Pendulum-v1")
    env.set_seed(0)
    rollout = env.rollout(5)
    assert rollout.batch_size == (5,)
    assert rollout["observation"].shape == (5, 3)
    assert rollout["next", "reward"].shape == (5, 1)
    assert env.action_spec.is_in(rollout["action"])
    env.close()
