import pytest
import torch

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs.transforms import DeviceCastTransform

META = torch.device("meta")
CPU = torch.device("cpu")

# CUDA is not here: the spec- and data-level tests move to "meta" (no storage; specs with
# finite bounds cannot live there, so they use CountingEnv's unbounded observations), and the
# rollouts on gymnasium envs go cpu -> cpu.


def test_whole_cast_moves_every_spec_and_the_env_device():
    env = TransformedEnv(CountingEnv(device="cpu"), DeviceCastTransform("meta"))
    assert env.device == META
    for spec in (
        env.full_observation_spec["observation"],
        env.full_reward_spec["reward"],
        env.full_done_spec["done"],
        env.full_action_spec["action"],
    ):
        assert spec.device == META
    assert env.base_env.full_action_spec["action"].device != META  # the base is untouched


def test_whole_cast_reset_and_step_outputs_on_the_device():
    t = DeviceCastTransform("meta")
    env = TransformedEnv(CountingEnv(device="cpu"), t)
    td = env.reset()
    assert td.device == META
    assert td["observation"].device == META
    assert td["done"].device == META
    # The inverse path targets the env's device (meta holds no values to move back, so the
    # moves themselves are checked by the cpu -> cpu rollouts below).
    assert t._env_device() == CPU


def test_cpu_to_cpu_rollout_matches_the_bare_env(pendulum):
    from rl_envs import GymEnv

    bare = GymEnv("Pendulum-v1")
    bare.set_seed(0)
    env = TransformedEnv(pendulum, Compose(DeviceCastTransform("cpu", "cpu"), StepCounter()))
    check_env_specs(env, seed=0)
    bare.set_seed(1)
    env.set_seed(1)
    torch.manual_seed(3)
    ref = bare.rollout(6, lambda td: td.set("action", torch.full((1,), 0.5)))
    ours = env.rollout(6, lambda td: td.set("action", torch.full((1,), 0.5)))
    torch.testing.assert_close(ours["next", "observation"], ref["next", "observation"])
    assert ours["next", "observation"].device == CPU


def test_keys_only_cast_on_env_specs():
    t = DeviceCastTransform("meta", in_keys=["observation"], in_keys_inv=["action"])
    env = TransformedEnv(CountingEnv(device="cpu"), t)
    assert env.full_observation_spec["observation"].device == META
    assert env.full_reward_spec["reward"].device == CPU
    assert env.full_action_spec["action"].device == META
    assert env.output_spec.device is None  # mixed devices
    assert env.device == env.base_env.device  # the env as a whole stays where it was
    td = env.reset()
    assert td["observation"].device == META
    assert td["done"].device == CPU


def test_keys_only_cpu_rollout_passes_check_env_specs(cartpole):
    env = TransformedEnv(
        cartpole, DeviceCastTransform("cpu", in_keys=["observation"], in_keys_inv=["action"])
    )
    check_env_specs(env, seed=0)
    traj = env.rollout(4, break_when_any_done=False)
    assert traj["next", "observation"].shape == (4, 4)


def test_plain_tensordict_from_a_buffer(buffer_batch):
    out = DeviceCastTransform("meta")(buffer_batch.clone())
    assert out.device == META
    assert out["next", "reward"].device == META
    partial = DeviceCastTransform("meta", in_keys=[("next", "observation")])(buffer_batch.clone())
    assert partial["next", "observation"].device == META
    assert partial["observation"].device == CPU
    assert partial.batch_size == buffer_batch.batch_size


def test_errors(cartpole):
    with pytest.raises(TypeError, match=r"DeviceCastTransform: expected device as a torch\.device"):
        DeviceCastTransform(object())
    env = TransformedEnv(cartpole, DeviceCastTransform("meta", in_keys=["pixels"]))
    with pytest.raises(KeyError, match="DeviceCastTransform: the key 'pixels' is not an obs"):
        env.reset()
    env = TransformedEnv(cartpole, DeviceCastTransform("meta", in_keys_inv=["force"]))
    with pytest.raises(KeyError, match="DeviceCastTransform: in_keys_inv entry 'force'"):
        env.full_action_spec  # noqa: B018


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_rollout(pendulum):
    env = TransformedEnv(pendulum, DeviceCastTransform("cuda"))
    check_env_specs(env, seed=0)
    traj = env.rollout(5, lambda td: td.set("action", torch.zeros(1, device="cuda")))
    assert traj["next", "observation"].is_cuda
    assert traj["action"].is_cuda
