import pytest
import torch

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_envs import GymEnv, SerialEnv
from rl_envs.transforms import TimeMaxPool


def test_max_over_two_frames_of_pong(pong):
    env = TransformedEnv(pong, TimeMaxPool(["observation"], ["pooled"]))
    check_env_specs(env)
    traj = env.rollout(6)
    raw = torch.cat([traj["observation"][:1], traj["next", "observation"]])
    assert torch.equal(traj["next", "pooled"], torch.maximum(raw[:-1], raw[1:]))


def test_matches_the_trajectory_path_with_resets(pendulum):
    env = TransformedEnv(
        pendulum, Compose(StepCounter(3), TimeMaxPool(["observation"], ["m"], T=3))
    )
    check_env_specs(env)
    traj = env.rollout(8, break_when_any_done=False)
    data = TimeMaxPool(["observation"], ["m2"], T=3)(traj.clone())
    assert torch.equal(data["m2"], traj["m"])


def test_partial_reset_in_a_batched_env():
    env = TransformedEnv(
        SerialEnv(2, lambda: GymEnv("Pendulum-v1")), TimeMaxPool(["observation"], ["m"], T=3)
    )
    td = env.reset()
    for _ in range(2):
        _, td = env.step_and_maybe_reset(env.rand_action(td))
    td["_reset"] = torch.tensor([[True], [False]])
    out = env.reset(td)
    assert torch.equal(out["m"][0], out["observation"][0])


def test_errors(cartpole):
    with pytest.raises(ValueError, match="TimeMaxPool: expected T >= 1"):
        TimeMaxPool(T=0)
    env = TransformedEnv(cartpole, TimeMaxPool())
    with pytest.raises(KeyError, match="TimeMaxPool: the key 'pixels' is not an observation"):
        env.reset()
