import pytest
import torch

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_envs import GymEnv, SerialEnv
from rl_envs.transforms import NoopResetEnv


def test_random_steps_after_reset_vary_the_start(pendulum):
    env = TransformedEnv(pendulum, Compose(NoopResetEnv(10), StepCounter()))
    check_env_specs(env)
    starts = []
    for _ in range(4):
        env.set_seed(0)
        starts.append(env.reset()["observation"])
    plain = GymEnv("Pendulum-v1")
    plain.set_seed(0)
    first = plain.reset()["observation"]
    assert all(not torch.equal(s, first) for s in starts)
    assert len({tuple(s.tolist()) for s in starts}) > 1
    assert env.reset()["step_count"].item() == 0


def test_fixed_number_of_steps(cartpole):
    env = TransformedEnv(cartpole, NoopResetEnv(3, random=False))
    env.set_seed(1)
    td = env.reset()
    plain = GymEnv("CartPole-v1")
    plain.set_seed(1)
    assert not torch.equal(td["observation"], plain.reset()["observation"])
    assert not td["done"].item()


def test_errors():
    with pytest.raises(ValueError, match="NoopResetEnv: expected noops >= 1"):
        NoopResetEnv(0)
    env = TransformedEnv(SerialEnv(2, lambda: GymEnv("CartPole-v1")), NoopResetEnv(3))
    with pytest.raises(RuntimeError, match="NoopResetEnv: expected an unbatched env below it"):
        env.reset()
