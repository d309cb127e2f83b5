"""BinarizeReward, LineariseRewards and TargetReturn, on batched envs and plain TensorDicts."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import Binary, Bounded, Composite, EnvBase, TransformedEnv, Unbounded, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs.transforms import BinarizeReward, LineariseRewards, TargetReturn


class TwoObjectiveEnv(EnvBase):
    """Rewards ``[*B, 2]`` drawn in ``[-1, 2] x [0, 3]`` from the env's generator."""

    def __init__(self, batch_size=(3,)):
        super().__init__(batch_size=batch_size)
        b = tuple(self.batch_size)
        self.observation_spec = Composite(observation=Unbounded(shape=(*b, 1)), shape=b)
        self.action_spec = Unbounded(shape=(*b, 1))
        low, high = torch.tensor([-1.0, 0.0]), torch.tensor([2.0, 3.0])
        self.reward_spec = Bounded(low.expand(*b, 2), high.expand(*b, 2), shape=(*b, 2))
        self.gen = torch.Generator().manual_seed(0)

    def _reset(self, tensordict, **kwargs):
        return TensorDict(observation=torch.zeros(*self.batch_size, 1), batch_size=self.batch_size)

    def _step(self, tensordict):
        u = torch.rand(*self.batch_size, 2, generator=self.gen)
        reward = torch.tensor([-1.0, 0.0]) + u * 3.0
        return TensorDict(
            observation=tensordict["observation"] + 1,
            reward=reward,
            done=torch.zeros(*self.batch_size, 1, dtype=torch.bool),
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed):
        self.gen.manual_seed(seed)


def _ones(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def test_binarize_reward_on_a_batched_env_and_on_data():
    env = TransformedEnv(CountingEnv(max_count=3, batch_size=[4]), BinarizeReward())
    check_env_specs(env)
    assert isinstance(env.reward_spec, Binary)
    assert env.reward_spec.dtype == torch.int8
    traj = env.rollout(3, _ones)
    assert traj["next", "reward"].dtype == torch.int8
    assert traj["next", "reward"].eq(1).all()  # CountingEnv's rewards are 1
    data = TensorDict(reward=torch.tensor([[-0.5], [0.0], [1e-6]], dtype=torch.float64))
    assert BinarizeReward()(data)["reward"].squeeze(-1).tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="BinarizeReward: expected a reward with a trailing dim"):
        BinarizeReward()(TensorDict(reward=torch.zeros(3, 2)))


def test_linearise_rewards_matches_the_weighted_sum_and_bounds():
    weights = [0.5, -2.0]
    env = TransformedEnv(TwoObjectiveEnv(), LineariseRewards(in_keys=["reward"], weights=weights))
    check_env_specs(env)
    spec = env.reward_spec
    assert spec.shape == (3, 1)
    # Bounds of 0.5 * r0 - 2 * r1 with r0 in [-1, 2], r1 in [0, 3]: [-6.5, 1.0].
    assert torch.allclose(spec.low, torch.full((3, 1), -6.5))
    assert torch.allclose(spec.high, torch.full((3, 1), 1.0))
    env.set_seed(1)
    traj = env.rollout(4)
    raw = TwoObjectiveEnv()
    raw.set_seed(1)
    reference = raw.rollout(4)["next", "reward"].double()
    expected = reference[..., 0:1] * 0.5 + reference[..., 1:2] * -2.0
    assert traj["next", "reward"].shape == (3, 4, 1)
    assert torch.allclose(traj["next", "reward"].double(), expected, atol=1e-6)


def test_linearise_rewards_defaults_and_errors():
    data = TensorDict(r=torch.tensor([[1.0, 2.0, 3.0]]), batch_size=[1])
    assert LineariseRewards(in_keys=["r"], out_keys=["s"])(data)["s"].tolist() == [[6.0]]
    with pytest.raises(ValueError, match="expected rewards with 2 objectives"):
        LineariseRewards(in_keys=["r"], weights=[1.0, 1.0])(data)
    with pytest.raises(ValueError, match="non-empty 1-d sequence"):
        LineariseRewards(in_keys=["r"], weights=[[1.0]])


class _IntRewardEnv(CountingEnv):
    def __init__(self):
        super().__init__()
        self.reward_spec = Unbounded(shape=(1,), dtype=torch.int64)


def test_linearise_rejects_integer_rewards():
    with pytest.raises(TypeError, match="LineariseRewards: the reward 'reward' has dtype"):
        TransformedEnv(_IntRewardEnv(), LineariseRewards(in_keys=["reward"])).reward_spec  # noqa: B018


@pytest.mark.parametrize("mode", ["reduce", "constant"])
def test_target_return_counts_down_and_restarts_at_partial_resets(mode):
    # Episodes of 3 steps (count 0 -> 3); 7 steps: sub-envs are reset at steps 3 and 6.
    env = TransformedEnv(CountingEnv(max_count=3, batch_size=[2]), TargetReturn(10.0, mode=mode))
    check_env_specs(env)
    assert env.observation_spec["target_return"].shape == (2, 1)
    traj = env.rollout(7, _ones, break_when_any_done=False)
    got = traj["next", "target_return"].squeeze(-1).double()
    # reduce: 10 - the rewards (1 each) collected in the episode so far.
    row = [9.0, 8.0, 7.0, 9.0, 8.0, 7.0, 9.0] if mode == "reduce" else [10.0] * 7
    assert torch.equal(got, torch.tensor([row, row], dtype=torch.float64))
    assert traj["target_return"][:, 0].eq(10.0).all()


def test_target_return_keys_and_errors():
    t = TargetReturn(1.0, in_keys=[("agents", "reward")])
    assert t.out_keys == [("agents", "target_return")]
    with pytest.raises(ValueError, match="expected mode in"):
        TargetReturn(1.0, mode="sum")
    with pytest.raises(RuntimeError, match="TargetReturn: runs inside an env"):
        TargetReturn(1.0)(TensorDict())
