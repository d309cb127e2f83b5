import pytest
import torch

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_envs import GymEnv
from rl_envs.transforms import FrameSkipTransform, ObservationNorm


def _constant_policy(td):
    return td.set("action", torch.tensor([1.0]))


def test_repeats_actions_and_sums_rewards(pendulum):
    env = TransformedEnv(pendulum, FrameSkipTransform(3))
    check_env_specs(env)
    env.set_seed(0)
    skipped = env.rollout(4, _constant_policy)
    plain = GymEnv("Pendulum-v1")
    plain.set_seed(0)
    ref = plain.rollout(12, _constant_policy)
    assert torch.allclose(skipped["next", "observation"], ref["next", "observation"][2::3])
    assert torch.allclose(skipped["next", "reward"], ref["next", "reward"].reshape(4, 3, 1).sum(1))


def test_stops_at_the_end_of_an_episode_and_under_later_inverses(cartpole):
    env = TransformedEnv(
        cartpole,
        Compose(
            FrameSkipTransform(4),
            ObservationNorm(0.0, 1.0, in_keys=["observation"]),
            StepCounter(),
        ),
    )
    check_env_specs(env)
    traj = env.rollout(
        100, lambda td: td.set("action", env.action_spec.zero() + torch.tensor([1, 0]))
    )
    # Pushing right ends CartPole in about 10 env steps: 3 skipped steps, the last one short.
    assert traj["next", "done"][-1].item()
    assert traj["next", "reward"][:-1].eq(4).all()
    assert traj["next", "reward"][-1].item() <= 4


def test_errors_and_data_path(cartpole):
    with pytest.raises(ValueError, match="FrameSkipTransform: expected frame_skip >= 1"):
        FrameSkipTransform(0)
    t = FrameSkipTransform(2)
    td = cartpole.rand_step(cartpole.reset())
    assert t(td.clone())["next", "reward"].item() == td["next", "reward"].item()
