import pytest
import torch
from tensordict import TensorDict

from rl_core import Compose, TransformedEnv, check_env_specs
from rl_envs.transforms import CatTensors


def test_moves_the_observation_into_one_vector(cartpole):
    env = TransformedEnv(cartpole, CatTensors(["observation"], "vec"))
    check_env_specs(env)
    assert env.observation_spec["vec"].shape == (4,)
    assert "observation" not in env.observation_spec.keys()


def test_bounds_are_concatenated_and_scalars_unsqueezed(pendulum):
    env = TransformedEnv(pendulum, Compose(CatTensors(["observation"], "obs_copy", del_keys=False)))
    env.append_transform(CatTensors(["observation", "obs_copy"], "both"))
    check_env_specs(env)
    spec = env.observation_spec["both"]
    assert spec.shape == (6,)
    assert spec.high.tolist() == [1.0, 1.0, 8.0, 1.0, 1.0, 8.0]


def test_on_a_buffer_batch():
    t = CatTensors(["a", "b"], "ab", del_keys=False)
    td = TensorDict(a=torch.zeros(4, 2), b=torch.ones(4), batch_size=[4])
    out = t(td)
    assert out["ab"].shape == (4, 3)
    assert out["ab"][:, -1].eq(1).all()


def test_errors(cartpole):
    with pytest.raises(ValueError, match="CatTensors: expected a negative dim"):
        CatTensors(["a"], dim=0)
    env = TransformedEnv(cartpole, CatTensors(["observation", "nope"]))
    with pytest.raises(KeyError, match="CatTensors: the key 'nope' is not an observation"):
        env.reset()
    with pytest.raises(KeyError, match=r"CatTensors: the entries \['b'\] are missing"):
        CatTensors(["a", "b"])(TensorDict(a=torch.zeros(2)))
