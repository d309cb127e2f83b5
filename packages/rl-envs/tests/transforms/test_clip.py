import pytest
import torch

from rl_core import TransformedEnv, check_env_specs
from rl_envs.transforms import ClipTransform, SignTransform


def test_clip_observations_and_actions_of_pendulum(pendulum):
    t = ClipTransform(["observation"], in_keys_inv=["action"], low=-0.5, high=0.5)
    env = TransformedEnv(pendulum, t)
    check_env_specs(env)
    assert env.observation_spec["observation"].high.tolist() == [0.5, 0.5, 0.5]
    assert env.action_spec.low.item() == -0.5
    traj = env.rollout(10)
    assert traj["observation"].abs().max() <= 0.5
    td = env.reset().set("action", torch.tensor([3.0]))
    assert t.inv(td)["action"].item() == 0.5


def test_sign_of_rewards_on_cartpole_and_a_buffer_batch(cartpole, buffer_batch):
    env = TransformedEnv(cartpole, SignTransform(["reward"]))
    check_env_specs(env)
    assert env.reward_spec.low.item() == -1
    out = SignTransform([("next", "reward")])(buffer_batch)
    assert set(out["next", "reward"].unique().tolist()) <= {-1.0, 0.0, 1.0}


def test_clip_on_a_buffer_batch(buffer_batch):
    out = ClipTransform(["observation"], low=0.0)(buffer_batch)
    assert out["observation"].min() >= 0.0


def test_errors(cartpole):
    with pytest.raises(ValueError, match="ClipTransform: give low, high or both"):
        ClipTransform(["observation"])
    with pytest.raises(ValueError, match="ClipTransform: expected low <= high"):
        ClipTransform(["observation"], low=1.0, high=0.0)
    env = TransformedEnv(cartpole, ClipTransform(in_keys_inv=["force"], low=0.0))
    with pytest.raises(KeyError, match="ClipTransform: in_keys_inv entry 'force' is not an action"):
        _ = env.action_spec
    env = TransformedEnv(cartpole, SignTransform(["done"]))
    with pytest.raises(KeyError, match="SignTransform: the key 'done'"):
        env.reset()
