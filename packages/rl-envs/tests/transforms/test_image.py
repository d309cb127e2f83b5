import pytest
import torch
from tensordict import TensorDict

from rl_core import Bounded, Compose, Composite, TransformedEnv, check_env_specs
from rl_envs.transforms import CenterCrop, Crop, GrayScale, ObservationNorm, Resize, ToTensorImage

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
    assert torch.equal(td["crop"], td["small"][:, 10:74, 26:58])


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
    assert ints.shape == (3, 20, 15)


def test_to_tensor_image_scales_integer_images_only_unless_from_int():
    # TorchRL's rule: uint8 images are divided by 255, floating ones only moved to [C, H, W]
    floats = torch.arange(12.0).reshape(2, 2, 3)  # [H, W, C]
    moved = ToTensorImage()(TensorDict(pixels=floats))["pixels"]
    assert moved.shape == (3, 2, 2)
    assert moved[:, 0, 0].tolist() == [0.0, 1.0, 2.0]
    scaled = ToTensorImage(from_int=True)(TensorDict(pixels=floats))["pixels"]
    torch.testing.assert_close(scaled, moved / 255)
    ints = torch.full((2, 2, 3), 255, dtype=torch.uint8)
    assert ToTensorImage(from_int=False)(TensorDict(pixels=ints))["pixels"].max().item() == 255.0
    spec = Composite(full_observation_spec=Composite(pixels=Bounded(0.0, 2.0, shape=(2, 2, 3))))
    out = ToTensorImage().transform_output_spec(spec.clone())["full_observation_spec", "pixels"]
    assert out.shape == (3, 2, 2)
    assert (out.low.max().item(), out.high.min().item()) == (0.0, 2.0)


def test_errors(cartpole, pong):
    env = TransformedEnv(cartpole, ToTensorImage(in_keys=OBS))
    with pytest.raises(ValueError, match=r"ToTensorImage: expected images \[..., C, H, W\]"):
        env.reset()
    with pytest.raises(TypeError, match="ToTensorImage: expected uint8 or floating images"):
        ToTensorImage().transform_output_spec(
            Composite(
                full_observation_spec=Composite(
                    pixels=Bounded(0, 9, shape=(4, 4, 3), dtype=torch.int64)
                )
            )
        )
    env = TransformedEnv(cartpole, Resize(8, in_keys=OBS))
    with pytest.raises(ValueError, match=r"Resize: expected images .* Missing pixels"):
        env.reset()
    env = TransformedEnv(pong, GrayScale(in_keys=OBS))
    with pytest.raises(ValueError, match="GrayScale: expected 3 channels"):
        env.reset()
    with pytest.raises(ValueError, match="Resize: interpolation must be one of"):
        Resize(8, interpolation="lanczos")


def test_resize_and_crops_take_torchrl_argument_order():
    # TorchRL (torchvision underneath): w is the size of dim -2, h that of dim -1.
    images = TensorDict(pixels=torch.rand(3, 30, 40))
    assert Resize(20, 21)(images.clone())["pixels"].shape == (3, 20, 21)
    assert Resize((20, 21))(images.clone())["pixels"].shape == (3, 20, 21)
    spec = Resize(20, 21, in_keys=["x"])._map("x", Bounded(0.0, 1.0, shape=(2, 3, 30, 40)))
    assert spec.shape == (2, 3, 20, 21)
    with pytest.raises(ValueError, match=r"Resize: expected w as an int or a pair \(w, h\)"):
        Resize((20, 21, 3))
    grid = torch.arange(7 * 9.0).reshape(1, 7, 9)  # value 9 * row + col
    # torchvision's center_crop starts at round((7 - 4) / 2) = 2, round((9 - 2) / 2) = 4
    crop = CenterCrop(4, 2, in_keys=["g"])(TensorDict(g=grid))["g"]
    assert crop.tolist() == [[[22.0, 23.0], [31.0, 32.0], [40.0, 41.0], [49.0, 50.0]]]
    window = Crop(2, 3, top=1, left=4, in_keys=["g"])(TensorDict(g=grid))["g"]
    assert window.tolist() == [[[13.0, 14.0, 15.0], [22.0, 23.0, 24.0]]]


def test_resize_downscales_with_antialiasing_as_torchvision():
    # 4 -> 2 columns, antialiased bilinear (triangle filter of support 2 input pixels): output
    # column 0 is centred at input coordinate 1.0, weights 3/7, 3/7, 1/7 on columns 0, 1, 2;
    # output column 1 weights 1/7, 3/7, 3/7 on columns 1, 2, 3. Without antialiasing it
    # would be the midpoints 3.5 and 17.5.
    row = torch.tensor([0.0, 7.0, 14.0, 21.0]).reshape(1, 1, 4)
    out = Resize(1, 2)(TensorDict(pixels=row))["pixels"]
    expected = torch.tensor([(3 * 0 + 3 * 7 + 14) / 7, (7 + 3 * 14 + 3 * 21) / 7])
    torch.testing.assert_close(out.flatten(), expected)


def test_observation_spec_of_one_entry_or_a_composite_as_torchrl():
    leaf = Bounded(-1.0, 1.0, shape=(3, 16, 16))
    assert Resize(20, 21).transform_observation_spec(leaf.clone()).shape == (3, 20, 21)
    assert CenterCrop(4, 2).transform_observation_spec(leaf.clone()).shape == (3, 4, 2)
    assert GrayScale().transform_observation_spec(leaf.clone()).shape == (1, 16, 16)
    # (x - 1) / 2 maps [-1, 1] to [-1, 0]
    norm = ObservationNorm(loc=1.0, scale=2.0, in_keys=["pixels"], standard_normal=True)
    mapped = norm.transform_observation_spec(leaf.clone())
    assert mapped.low.unique().tolist() == [-1.0]
    assert mapped.high.unique().tolist() == [0.0]
    both = Composite(a=leaf.clone(), b=leaf.clone(), other=leaf.clone())
    mapped = Crop(2, 3, in_keys=["a", "b"], out_keys=["a", "c"]).transform_observation_spec(both)
    assert mapped["a"].shape == mapped["c"].shape == (3, 2, 3)
    assert mapped["b"].shape == mapped["other"].shape == (3, 16, 16)
    with pytest.raises(ValueError, match=r"Crop: a single spec stands for one entry.*2 in_keys"):
        Crop(2, in_keys=["a", "b"]).transform_observation_spec(leaf.clone())
    with pytest.raises(TypeError, match="Resize: expected a TensorSpec or a Composite, got int"):
        Resize(2).transform_observation_spec(3)


def test_to_tensor_image_dtype_defaults_to_torchs_default_dtype_at_build():
    image = torch.full((4, 5, 3), 51, dtype=torch.uint8)  # 51 / 255 = 0.2
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        t = ToTensorImage()
    finally:
        torch.set_default_dtype(previous)
    out = t(TensorDict(pixels=image))["pixels"]
    assert out.dtype == torch.float64
    assert out.shape == (3, 4, 5)
    assert out[0, 0, 0].item() == pytest.approx(0.2)
    assert ToTensorImage()(TensorDict(pixels=image))["pixels"].dtype == previous
