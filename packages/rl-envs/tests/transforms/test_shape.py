import pytest
import torch
from tensordict import TensorDict

from rl_core import Bounded, Compose, TransformedEnv, check_env_specs
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


def test_positive_dims_need_allow_positive_dim():
    with pytest.raises(ValueError, match=r"UnsqueezeTransform: expected a negative dim.*allow_pos"):
        UnsqueezeTransform(1, in_keys=["x"])
    with pytest.raises(ValueError, match=r"^SqueezeTransform: expected a negative dim .*got 0"):
        SqueezeTransform(0, in_keys=["x"])
    with pytest.raises(ValueError, match="FlattenObservation: expected a negative first_dim"):
        FlattenObservation(0, -1, in_keys=["x"])
    with pytest.raises(TypeError, match="UnsqueezeTransform: expected an int dim, got float"):
        UnsqueezeTransform(1.0, in_keys=["x"], allow_positive_dim=True)


def test_positive_dim_outside_an_env_is_the_tensors_own_dim():
    # TorchRL: without a parent env a dim >= 0 indexes the tensor itself, batch dims included.
    td = TensorDict(x=torch.zeros(2, 3, 4), batch_size=[2])
    out = UnsqueezeTransform(1, in_keys=["x"], allow_positive_dim=True)(td.clone())
    assert out["x"].shape == (2, 1, 3, 4)
    td = TensorDict(x=torch.zeros(2, 1, 4), batch_size=[])
    assert SqueezeTransform(1, in_keys=["x"], allow_positive_dim=True)(td)["x"].shape == (2, 4)
    # a batch dim cannot be squeezed or grown: the TensorDict refuses the entry
    with pytest.raises(RuntimeError):
        UnsqueezeTransform(0, in_keys=["x"], allow_positive_dim=True)(
            TensorDict(x=torch.zeros(2, 3), batch_size=[2])
        )
    spec = Bounded(-1.0, 1.0, shape=(2, 1, 4))
    assert SqueezeTransform(1, in_keys=["x"], allow_positive_dim=True)._map("x", spec).shape == (
        2,
        4,
    )


def test_positive_dims_count_after_the_env_batch_dims():
    from rl_envs.native.pendulum import PendulumEnv

    base = PendulumEnv(batch_size=[2])  # observation [2, 3], reward [2, 1], action [2, 1]
    env = TransformedEnv(
        base,
        Compose(
            UnsqueezeTransform(0, in_keys=["observation"], allow_positive_dim=True),
            SqueezeTransform(
                0, in_keys=["reward"], in_keys_inv=["action"], allow_positive_dim=True
            ),
            FlattenObservation(0, 1, in_keys=["observation"], allow_positive_dim=True),
        ),
    )
    # dim 0 after the batch dim [2]: observation [2, 3] -> [2, 1, 3] -> flattened [2, 3]
    assert env.transform[0].dim == 1
    assert env.reward_spec.shape == (2,)
    assert env.observation_spec["observation"].shape == (2, 3)
    assert env.full_action_spec["action"].shape == (2,)
    check_env_specs(env)
    traj = env.rollout(3, lambda td: td.set("action", torch.zeros(2)))
    assert traj["next", "reward"].shape == (2, 3)
    assert traj["observation"].shape == (2, 3, 3)
    only_unsqueeze = TransformedEnv(
        PendulumEnv(batch_size=[2]),
        UnsqueezeTransform(1, in_keys=["observation"], allow_positive_dim=True),
    )
    assert only_unsqueeze.observation_spec["observation"].shape == (2, 3, 1)
    assert only_unsqueeze.reset()["observation"].shape == (2, 3, 1)


def test_observation_spec_of_one_entry_as_torchrl():
    leaf = Bounded(-1.0, 1.0, shape=(3, 16, 16))
    unsqueeze = UnsqueezeTransform(-2, in_keys=["pixels"])
    assert unsqueeze.transform_observation_spec(leaf.clone()).shape == (3, 16, 1, 16)
    flat = FlattenObservation(-3, -1, in_keys=["pixels"]).transform_observation_spec(leaf.clone())
    assert flat.shape == (768,)
