import pytest
import torch
from tensordict import TensorDict

from rl_core import Compose, TransformedEnv, check_env_specs
from rl_envs import GymEnv, SerialEnv
from rl_envs.transforms import PixelRenderTransform, Resize, ToTensorImage, VideoRecorder

PIL = pytest.importorskip("PIL.Image")


class ListLogger:
    """Duck-typed logger: anything with log_video."""

    def __init__(self):
        self.videos = []

    def log_video(self, name, video, step=None):
        self.videos.append((name, video, step))


def test_gif_of_pong_frames(pong, tmp_path):
    recorder = VideoRecorder(tag="pong", in_keys=["observation"], folder=tmp_path, skip=2)
    env = TransformedEnv(pong, recorder)
    check_env_specs(env)
    recorder.frames.clear()
    env.rollout(9)
    path = recorder.dump()
    gif = PIL.open(path)
    assert gif.size == (160, 210)
    assert gif.n_frames == 5  # 10 frames (reset + 9 steps), one out of 2
    assert recorder.dump() is None  # nothing left


@pytest.mark.slow
def test_logger_gets_float_frames_of_a_batched_env():
    pytest.importorskip("ale_py")
    logger = ListLogger()
    env = TransformedEnv(
        SerialEnv(2, lambda: GymEnv("ALE/Pong-v5", frameskip=4)),
        Compose(
            ToTensorImage(in_keys=["observation"]),
            Resize(32, 32, in_keys=["observation"]),
            VideoRecorder(logger, tag="eval", in_keys=["observation"]),
        ),
    )
    env.rollout(3)
    env.transform[-1].dump()
    name, video, step = logger.videos[0]
    assert (name, step) == ("eval", 1)
    assert video.shape == (1, 4, 3, 32, 64)  # two sub-envs side by side
    assert video.dtype == torch.uint8


def test_render_cartpole_and_record(monkeypatch, tmp_path):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    pytest.importorskip("pygame")
    env = TransformedEnv(
        GymEnv("CartPole-v1", render_mode="rgb_array"),
        Compose(PixelRenderTransform(), VideoRecorder(folder=tmp_path)),
    )
    check_env_specs(env)
    assert env.observation_spec["pixels"].shape == (400, 600, 3)
    traj = env.rollout(3)
    assert traj["pixels"].dtype == torch.uint8
    assert env.transform[1].dump().exists()


@pytest.mark.parametrize("kind", ["vector", "serial"])
def test_render_batched_cartpole(kind, monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    pytest.importorskip("pygame")
    if kind == "vector":
        base = GymEnv("CartPole-v1", num_envs=2, render_mode="rgb_array")
    else:
        base = SerialEnv(2, lambda: GymEnv("CartPole-v1", render_mode="rgb_array"))
    env = TransformedEnv(base, PixelRenderTransform())
    check_env_specs(env, seed=0)
    assert env.observation_spec["pixels"].shape == (2, 400, 600, 3)
    traj = env.rollout(3, break_when_any_done=False)
    pixels = traj["next", "pixels"]
    assert pixels.shape == (2, 3, 400, 600, 3)
    # One frame per sub-env: the frame of sub-env 1 is its own render, not sub-env 0's.
    sub = base.env.envs[1] if kind == "vector" else base._envs[1].env
    torch.testing.assert_close(pixels[1, -1], torch.as_tensor(sub.render()))
    assert not torch.equal(pixels[0, -1], pixels[1, -1])
    env.close()


def test_render_needs_a_way_to_reach_the_sub_envs():
    from rl_core.testing import CountingEnv

    env = TransformedEnv(CountingEnv(batch_size=[2]), PixelRenderTransform())
    with pytest.raises(TypeError, match="PixelRenderTransform: CountingEnv has no render method"):
        env.reset()
    frames = TransformedEnv(
        CountingEnv(batch_size=[2]),
        PixelRenderTransform(render_fn=lambda env: [torch.zeros(4, 4, 3, dtype=torch.uint8)]),
    )
    with pytest.raises(ValueError, match=r"PixelRenderTransform: expected one frame per sub-env"):
        frames.reset()


def test_buffer_batch_frames(tmp_path):
    recorder = VideoRecorder(folder=tmp_path)
    recorder(TensorDict(pixels=torch.rand(6, 3, 8, 8), batch_size=[6]))
    assert len(recorder.frames) == 6
    assert PIL.open(recorder.dump()).n_frames == 6


@pytest.mark.filterwarnings("ignore:.*render method without specifying any render mode")
def test_errors(cartpole):
    with pytest.raises(TypeError, match=r"VideoRecorder: the logger .* has no log_video"):
        VideoRecorder(logger=object())
    env = TransformedEnv(cartpole, VideoRecorder())
    with pytest.raises(KeyError, match="VideoRecorder: the env shows no 'pixels' frames"):
        env.reset()
    env = TransformedEnv(cartpole, PixelRenderTransform())
    with pytest.raises(RuntimeError, match="PixelRenderTransform: the env rendered nothing"):
        env.reset()
