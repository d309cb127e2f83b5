import pytest
import torch
from tensordict import TensorDict

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_envs import GymEnv, SerialEnv
from rl_envs.transforms import CatFrames


def test_stacks_frames_in_an_env_and_pads_at_reset(pendulum):
    env = TransformedEnv(pendulum, CatFrames(3, -1, in_keys=["observation"], out_keys=["stack"]))
    check_env_specs(env)
    traj = env.rollout(5)
    stack, obs = traj["stack"], traj["observation"]
    assert stack.shape == (5, 9)
    assert torch.equal(stack[0], obs[0].repeat(3))  # padding="same" at the episode start
    assert torch.equal(stack[3], torch.cat([obs[1], obs[2], obs[3]]))
    assert torch.equal(traj["next", "stack"][3], torch.cat([obs[2], obs[3], obs[4]]))


def test_constant_padding_and_spec_bounds(pendulum):
    env = TransformedEnv(pendulum, CatFrames(2, -1, in_keys=["observation"], padding="constant"))
    check_env_specs(env)
    td = env.reset()
    assert td["observation"][:3].eq(0).all()
    assert env.observation_spec["observation"].low.tolist() == [-1.0, -1.0, -8.0] * 2


def test_episode_starts_in_a_batched_env_with_partial_resets():
    env = TransformedEnv(
        SerialEnv(2, lambda: GymEnv("CartPole-v1")),
        Compose(CatFrames(4, -1, in_keys=["observation"]), StepCounter(3)),
    )
    env.set_seed(0)
    check_env_specs(env)
    traj = env.rollout(7, break_when_any_done=False)
    stacks = traj["observation"].reshape(2, 7, 4, 4)
    for t in (0, 3, 6):  # StepCounter(3) resets every 3 steps: each start repeats one frame
        assert (stacks[:, t] == stacks[:, t, :1]).all()
    assert not (stacks[:, 2] == stacks[:, 2, :1]).all()


def test_buffer_trajectories_match_the_env(cartpole):
    env = TransformedEnv(cartpole, StepCounter(4))
    traj = env.rollout(10, break_when_any_done=False)  # episodes of 4, 4 and 2 steps
    stacked_env = TransformedEnv(
        GymEnv("CartPole-v1"), Compose(StepCounter(4), CatFrames(3, -1, in_keys=["observation"]))
    )
    stacked_env.set_seed(0)
    torch.manual_seed(0)
    reference = stacked_env.rollout(10, break_when_any_done=False)
    raw = traj.exclude("step_count", ("next", "step_count"))
    data = CatFrames(3, -1, in_keys=["observation"])(raw.clone())
    assert torch.equal(data["observation"], reference["observation"])
    assert torch.equal(data["next", "observation"], reference["next", "observation"])
    # The same on a [batch, time] sample.
    both = CatFrames(3, -1, in_keys=["observation"])(torch.stack([raw, raw]).clone())
    assert torch.equal(both["observation"][1], reference["observation"])


def test_pixels_of_an_atari_game(pong):
    from rl_envs.transforms import GrayScale, Resize, ToTensorImage

    env = TransformedEnv(
        pong,
        Compose(
            ToTensorImage(in_keys=["observation"]),
            GrayScale(in_keys=["observation"]),
            Resize(42, 42, in_keys=["observation"]),
            CatFrames(4, -3, in_keys=["observation"]),
        ),
    )
    check_env_specs(env)
    assert env.observation_spec["observation"].shape == (4, 42, 42)


def test_errors(cartpole):
    with pytest.raises(ValueError, match="CatFrames: expected N >= 1"):
        CatFrames(0, -1)
    with pytest.raises(ValueError, match="CatFrames: expected a negative dim"):
        CatFrames(2, 1)
    with pytest.raises(ValueError, match="CatFrames: padding must be one of"):
        CatFrames(2, -1, padding="reflect")
    env = TransformedEnv(cartpole, CatFrames(2, -3))
    with pytest.raises(KeyError, match="CatFrames: the key 'pixels' is not an observation"):
        env.reset()
    with pytest.raises(ValueError, match="CatFrames: a TensorDict outside an env needs a time dim"):
        CatFrames(2, -1, in_keys=["x"])(TensorDict(x=torch.zeros(3)))


def test_partial_reset_restarts_only_the_reset_sub_env():
    env = TransformedEnv(
        SerialEnv(2, lambda: GymEnv("Pendulum-v1")), CatFrames(3, -1, in_keys=["observation"])
    )
    td = env.reset()
    for _ in range(3):
        _, td = env.step_and_maybe_reset(env.rand_action(td))
    td["_reset"] = torch.tensor([[True], [False]])
    before = td["observation"].clone()
    out = env.reset(td)
    frames = out["observation"].reshape(2, 3, 3)
    assert torch.equal(frames[0], frames[0, :1].expand(3, 3))
    assert torch.equal(out["observation"][1], before[1])
    assert not torch.equal(frames[1], frames[1, :1].expand(3, 3))
