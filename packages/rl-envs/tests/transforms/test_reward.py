import pytest
import torch

from rl_core import Compose, RewardSum, TransformedEnv, check_env_specs
from rl_envs.transforms import RewardClipping, RewardScaling


def test_reward_scaling_on_pendulum(pendulum):
    env = TransformedEnv(pendulum, Compose(RewardScaling(loc=1.0, scale=0.1), RewardSum()))
    check_env_specs(env)
    raw = TransformedEnv(pendulum.__class__("Pendulum-v1"), RewardSum())
    raw.set_seed(0)
    env.set_seed(0)
    policy = lambda td: td.set("action", torch.ones(1))  # noqa: E731
    scaled = env.rollout(5, policy)["next", "reward"]
    base = raw.rollout(5, policy)["next", "reward"]
    assert torch.allclose(scaled, base * 0.1 + 1.0)
    assert env.reward_spec.dtype == torch.float32


def test_reward_scaling_standard_normal_on_a_buffer_batch(buffer_batch):
    batch = buffer_batch
    expected = (batch["next", "reward"] - 2.0) / 4.0
    out = RewardScaling(2.0, 4.0, in_keys=[("next", "reward")], standard_normal=True)(batch)
    assert torch.allclose(out["next", "reward"], expected)


def test_reward_clipping_on_cartpole_and_spec(cartpole):
    env = TransformedEnv(cartpole, RewardClipping(-0.5, 0.5))
    check_env_specs(env)
    assert env.reward_spec.high.item() == 0.5
    assert env.rollout(4)["next", "reward"].eq(0.5).all()


def test_reward_clipping_on_a_buffer_batch(buffer_batch):
    out = RewardClipping(clamp_max=1.0, in_keys=[("next", "reward")])(buffer_batch)
    assert out["next", "reward"].max() <= 1.0


def test_errors(cartpole):
    with pytest.raises(ValueError, match="RewardClipping: give clamp_min, clamp_max or both"):
        RewardClipping()
    with pytest.raises(ValueError, match="RewardClipping: expected clamp_min <= clamp_max"):
        RewardClipping(1.0, 0.0)
    with pytest.raises(ValueError, match="RewardScaling: scale must be nonzero"):
        RewardScaling(0.0, 0.0, standard_normal=True)
    env = TransformedEnv(cartpole, RewardScaling(0.0, 1.0, in_keys=["bonus"]))
    with pytest.raises(
        KeyError, match="RewardScaling: the key 'bonus' is not an observation or reward"
    ):
        env.reset()
