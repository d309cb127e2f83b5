import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_envs.transforms import DTypeCastTransform


def test_forward_and_inverse_on_pendulum(pendulum):
    t = DTypeCastTransform(
        torch.float32, torch.float64, in_keys=["observation"], in_keys_inv=["action"]
    )
    env = TransformedEnv(pendulum, t)
    check_env_specs(env)
    assert env.observation_spec["observation"].dtype == torch.float64
    assert env.action_spec.dtype == torch.float64
    traj = env.rollout(3, lambda td: td.set("action", torch.ones(1, dtype=torch.float64)))
    assert traj["next", "observation"].dtype == torch.float64
    assert t.inv(traj[0])["action"].dtype == torch.float32


def test_all_entries_of_a_dtype_by_default(cartpole):
    env = TransformedEnv(cartpole, DTypeCastTransform(torch.float32, torch.float16))
    check_env_specs(env)
    assert env.observation_spec["observation"].dtype == torch.float16
    assert env.reward_spec.dtype == torch.float16
    td = DTypeCastTransform(torch.float32, torch.float16)(
        TensorDict(a=torch.zeros(2), b=torch.zeros(2, dtype=torch.int64))
    )
    assert (td["a"].dtype, td["b"].dtype) == (torch.float16, torch.int64)


def test_errors(cartpole):
    with pytest.raises(TypeError, match=r"DTypeCastTransform: dtype_out must be a torch\.dtype"):
        DTypeCastTransform(torch.float32, "float16")
    env = TransformedEnv(
        cartpole, DTypeCastTransform(torch.float64, torch.float32, in_keys=["observation"])
    )
    with pytest.raises(TypeError, match="DTypeCastTransform: the entry 'observation' has dtype"):
        env.reset()
