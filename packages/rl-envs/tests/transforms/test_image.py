import pytest
import torch
from tensordict import TensorDict

from rl_core import Compose, TransformedEnv, check_env_specs
from rl_envs.transforms import CenterCrop, GrayScale, ObservationNorm, Resize, ToTensorImage

OBS = ["observation"]


def test_to_tensor_image_on_pong(pong):
    env = TransformedEnv(pong, ToTensorImage(in_keys=OBS, out_keys=["image"]))
    check_env_specs(env)
    traj = env.rollout(3)
    img, raw = traj["image"], traj["observation"]
    assert img.shape == (3, 3, 210, 160)
    assert torch.equal(img, raw.permute(0, 3, 1, 2).float() / 255)


def test_gray_resize_crop_on_pong(pong):
    env = TransformedEnv(
        pong,
        Compose(
            ToTensorImage(in_keys=OBS),
            GrayScale(in_keys=OBS, out_keys=["gray"]),
            Resize(84, 84, in_keys=["gray"], out_keys=["small"]),
            CenterCrop(64, 32, in_keys=["small"], out_keys=["crop"]),
        ),
    )
    check_env_specs(env)
    td = env.reset()
    rgb, gray = td["observation"], td["gray"]
    expected = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
    assert torch.allclose(gray[0], expected, atol=1e-6)
    assert td["small"].shape == (1, 84, 84)
    assert torch.equal(td["crop"], td["small"][:, 26:58, 10:74])


def test_normalised_pixels(pong):
    env = TransformedEnv(
        pong,
        Compose(ToTensorImage(in_keys=OBS), ObservationNorm(in_keys=OBS, standard_normal=True)),
    )
    env.transform[1].init_stats(8, reduce_dim=(0, 2, 3), keep_dims=(2, 3))
    assert env.transform[1].loc.shape == (3, 1, 1)
    check_env_specs(env)


def test_on_a_buffer_batch_of_uint8_frames():
    frames = torch.randint(0, 256, (4, 2, 30, 40, 3), dtype=torch.uint8)
    data = TensorDict(pixels=frames, batch_size=[4, 2])
    out = Compose(ToTensorImage(), GrayScale(), Resize(20, 10), CenterCrop(8))(data)
    assert out["pixels"].shape == (4, 2, 1, 8, 8)
    chw = TensorDict(pixels=frames[0, 0].permute(2, 0, 1))
    ints = Resize(20, 15, interpolation="nearest")(chw)["pixels"]
    assert ints.dtype == torch.uint8
    assert ints.shape == (3, 15, 20)


def test_errors(cartpole, pong):
    env = TransformedEnv(cartpole, ToTensorImage(in_keys=OBS))
    with pytest.raises(TypeError, match="ToTensorImage: expected uint8 images under 'observation'"):
        env.reset()
    env = TransformedEnv(cartpole, Resize(8, in_keys=OBS))
    with pytest.raises(ValueError, match=r"Resize: expected images .* Missing pixels"):
        env.reset()
    env = TransformedEnv(pong, GrayScale(in_keys=OBS))
    with pytest.raises(ValueError, match="GrayScale: expected 3 channels"):
        env.reset()
    env = TransformedEnv(pong, CenterCrop(500, in_keys=OBS))
    with pytest.raises(ValueError, match="CenterCrop: cannot crop 500x500"):
        env.reset()
    with pytest.raises(ValueError, match="Resize: interpolation must be one of"):
        Resize(8, interpolation="lanczos")
