import pytest
import torch
from tensordict import TensorDict

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
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


def test_double_to_float_casts_float64_outputs_and_gives_actions_back(pendulum):
    from rl_envs.transforms import DoubleToFloat

    # A float64 env: pendulum's observation and action shown as float64.
    double = TransformedEnv(
        pendulum,
        DTypeCastTransform(
            torch.float32, torch.float64, in_keys=["observation"], in_keys_inv=["action"]
        ),
    )
    env = TransformedEnv(double, DoubleToFloat(in_keys_inv=["action"]))
    check_env_specs(env)
    assert env.observation_spec["observation"].dtype == torch.float32
    assert env.action_spec.dtype == torch.float32
    td = env.rand_step(env.reset())
    assert td["next", "observation"].dtype == torch.float32
    assert td["action"].dtype == torch.float32
    # The float64 env below reads the action as float64.
    assert env.transform.inv(td.clone())["action"].dtype == torch.float64


def test_double_to_float_on_plain_data_and_refusals():
    from rl_envs.transforms import DoubleToFloat

    td = DoubleToFloat()(
        TensorDict(a=torch.zeros(2, dtype=torch.float64), b=torch.zeros(2, dtype=torch.int64))
    )
    assert (td["a"].dtype, td["b"].dtype) == (torch.float32, torch.int64)
    assert repr(DoubleToFloat()).startswith("DoubleToFloat(torch.float64 -> torch.float32")


def test_double_to_float_refuses_a_listed_entry_that_is_not_float64(cartpole):
    from rl_envs.transforms import DoubleToFloat

    env = TransformedEnv(cartpole, DoubleToFloat(in_keys=["observation"]))
    with pytest.raises(TypeError, match=r"the entry 'observation' has dtype torch\.float32"):
        env.reset()


def test_fusable_declarations_live_in_the_registry_not_in_the_classes():
    from rl_envs.transforms import (
        BinarizeReward,
        ClipTransform,
        DoubleToFloat,
        FiniteTensorDictCheck,
        LineariseRewards,
        ObservationNorm,
        RewardClipping,
        RewardScaling,
        RewardSum,
        SignTransform,
    )

    kinds = (BinarizeReward, ClipTransform, DoubleToFloat, FiniteTensorDictCheck)
    kinds += (LineariseRewards, ObservationNorm, RewardClipping, RewardScaling, SignTransform)
    kinds += (RewardSum,)
    for kind in kinds:
        assert "fusable" not in vars(kind), kind
    # The values the classes declared before, read the same way.
    assert DoubleToFloat().fusable
    assert RewardSum().fusable
    assert Compose(RewardSum(), StepCounter()).fusable
    assert not Compose(RewardSum(), StepCounter(max_steps=2)).fusable
    assert FiniteTensorDictCheck().fusable
    assert ObservationNorm(loc=0.0, scale=1.0, in_keys=["observation"]).fusable
    assert RewardScaling(loc=0.0, scale=2.0).fusable
    assert not RewardScaling(loc=0.0, scale=2.0, out_keys=["done"]).fusable
    assert ClipTransform(in_keys=["observation"], low=-1.0, high=1.0).fusable
    assert not ClipTransform(in_keys=["observation"], out_keys=["truncated"], low=-1.0).fusable
    assert not DTypeCastTransform(torch.float64, torch.float32).fusable
