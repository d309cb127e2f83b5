import pytest
from tensordict import TensorDict

from rl_core import Composite, TransformedEnv, Unbounded, check_env_specs
from rl_envs import GymEnv, SerialEnv
from rl_envs.transforms import TensorDictPrimer


def test_recurrent_state_is_written_and_carried(cartpole):
    env = TransformedEnv(cartpole, TensorDictPrimer(hidden=Unbounded(shape=(2, 8))))
    check_env_specs(env)
    assert "hidden" in env.state_spec.keys()

    def policy(td):
        td.set("action", env.action_spec.rand())
        return td.set(("next", "hidden"), td["hidden"] + 1)

    traj = env.rollout(4, policy)
    assert traj["hidden"][:, 0, 0].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_random_values_and_batched_envs():
    primer = TensorDictPrimer(Composite(h=Unbounded(shape=(3,))), random=True)
    env = TransformedEnv(SerialEnv(2, lambda: GymEnv("CartPole-v1")), primer)
    check_env_specs(env)
    td = env.reset()
    assert td["h"].shape == (2, 3)
    assert td["h"].std() > 0


def test_fills_missing_entries_of_a_buffer_batch():
    t = TensorDictPrimer(h=Unbounded(shape=(4,)), default_value=2.0)
    out = t(TensorDict(batch_size=[5]))
    assert out["h"].shape == (5, 4)
    assert out["h"].eq(2).all()


def test_an_empty_primer_adds_nothing_as_in_torchrl(cartpole):
    env = TransformedEnv(cartpole, TensorDictPrimer())
    check_env_specs(env)
    assert env.observation_spec.keys() == cartpole.observation_spec.keys()
    assert set(env.reset().keys()) == set(cartpole.reset().keys())


def test_errors(cartpole):
    env = TransformedEnv(cartpole, TensorDictPrimer(observation=Unbounded(shape=(4,))))
    with pytest.raises(KeyError, match="TensorDictPrimer: the env already has an entry"):
        env.reset()
    env = TransformedEnv(GymEnv("CartPole-v1"), TensorDictPrimer(h=Unbounded(shape=(1,))))
    with pytest.raises(KeyError, match="TensorDictPrimer: expected 'h'"):
        env.step(env.rand_action(env.reset().exclude("h")))
