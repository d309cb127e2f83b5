import pytest
import torch
from tensordict import TensorDict

from rl_core import Compose, TransformedEnv, check_env_specs
from rl_envs.transforms import (
    FlattenObservation,
    PermuteTransform,
    SqueezeTransform,
    UnsqueezeTransform,
)


def test_unsqueeze_and_squeeze_observations_and_actions(pendulum):
    env = TransformedEnv(
        pendulum,
        Compose(
            UnsqueezeTransform(-1, in_keys=["observation"], in_keys_inv=["action"]),
            SqueezeTransform(-1, in_keys=["reward"]),
        ),
    )
    check_env_specs(env)
    assert env.observation_spec["observation"].shape == (3, 1)
    assert env.action_spec.shape == (1, 1)
    assert env.reward_spec.shape == ()
    traj = env.rollout(3, lambda td: td.set("action", torch.zeros(1, 1)))
    assert traj["next", "reward"].shape == (3,)


def test_permute_and_flatten_on_pixels(pong):
    env = TransformedEnv(
        pong,
        Compose(
            PermuteTransform([-1, -3, -2], in_keys=["observation"]),
            FlattenObservation(-2, -1, in_keys=["observation"]),
        ),
    )
    check_env_specs(env)
    assert env.observation_spec["observation"].shape == (3, 210 * 160)


def test_on_a_buffer_batch():
    td = TensorDict(x=torch.arange(24.0).reshape(2, 3, 4), batch_size=[2])
    out = PermuteTransform([-1, -2], in_keys=["x"], out_keys=["y"])(td)
    assert torch.equal(out["y"], td["x"].transpose(-1, -2))
    t = PermuteTransform([-2, -3, -1], in_keys_inv=["x"])
    back = t.inv(TensorDict(x=torch.rand(5, 2, 3, 4), batch_size=[5]))
    assert back["x"].shape == (5, 3, 2, 4)
    assert FlattenObservation(-2, -1, in_keys=["x"])(td)["x"].shape == (2, 12)


def test_errors(cartpole):
    with pytest.raises(ValueError, match="UnsqueezeTransform: expected a negative dim"):
        UnsqueezeTransform(0, in_keys=["observation"])
    with pytest.raises(ValueError, match="PermuteTransform: dims must be a permutation"):
        PermuteTransform([-1, -1])
    with pytest.raises(ValueError, match="FlattenObservation: expected first_dim <= last_dim"):
        FlattenObservation(-1, -2)
    env = TransformedEnv(cartpole, SqueezeTransform(-1, in_keys=["observation"]))
    with pytest.raises(ValueError, match="SqueezeTransform: the entry 'observation' of shape"):
        env.reset()
