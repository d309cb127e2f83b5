"""rl_envs.transforms.functional.cat_frames against hand-written windows, and CatFrames.unfolding
(TorchRL's offline path) built on it."""

import pytest
import torch
from tensordict import TensorDict

from rl_envs.transforms import CatFrames
from rl_envs.transforms.functional import cat_frames


def test_windows_of_one_trajectory_padded_at_its_start():
    frames = torch.arange(8.0).view(4, 2)  # steps [0, 1], [2, 3], [4, 5], [6, 7]
    constant = cat_frames(frames, N=3, dim=-1, time_dim=-2, padding="constant", padding_value=-1)
    assert constant.tolist() == [
        [-1, -1, -1, -1, 0, 1],
        [-1, -1, 0, 1, 2, 3],
        [0, 1, 2, 3, 4, 5],
        [2, 3, 4, 5, 6, 7],
    ]
    same = cat_frames(frames, N=3, dim=-1, time_dim=-2)
    assert same.tolist() == [
        [0, 1, 0, 1, 0, 1],
        [0, 1, 0, 1, 2, 3],
        [0, 1, 2, 3, 4, 5],
        [2, 3, 4, 5, 6, 7],
    ]
    ints = cat_frames(torch.arange(3).view(1, 3, 1), N=2, dim=-1, time_dim=-2)
    assert ints.dtype == torch.int64
    assert ints.tolist() == [[[0, 0], [0, 1], [1, 2]]]


def test_done_mask_pads_across_an_episode_start():
    x = torch.tensor([10.0, 11.0, 12.0, 13.0, 14.0]).view(5, 1)  # a new episode at step 3
    mask = torch.tensor(
        [[True, False], [False, False], [False, False], [True, False], [False, False]]
    )
    same = cat_frames(x, N=2, dim=-1, time_dim=-2, done_mask=mask)
    assert same.tolist() == [[10, 10], [10, 11], [11, 12], [13, 13], [13, 14]]
    constant = cat_frames(
        x, 2, -1, time_dim=-2, padding="constant", padding_value=-1, done_mask=mask
    )
    assert constant.tolist() == [[-1, 10], [10, 11], [11, 12], [-1, 13], [13, 14]]
    with pytest.raises(ValueError, match=r"expected done_mask of shape \(5, 2\)"):
        cat_frames(x, 2, -1, time_dim=-2, done_mask=mask[:, :1])
    with pytest.raises(ValueError, match="cat_frames: expected N as an int >= 1, got 0"):
        cat_frames(x, 0, -1, time_dim=-2)
    with pytest.raises(ValueError, match="padding must be one of"):
        cat_frames(x, 2, -1, time_dim=-2, padding="zeros")


@pytest.mark.parametrize("padding", ["same", "constant"])
def test_unfolding_is_the_functional_on_episodes(padding):
    x = torch.tensor([10.0, 11.0, 12.0, 13.0, 14.0]).view(1, 5, 1).expand(2, 5, 1).clone()
    done = torch.zeros(2, 5, 1, dtype=torch.bool)
    done[0, 2] = True  # batch 0: a new episode at step 3; batch 1: one episode
    td = TensorDict({"obs": x, ("next", "done"): done}, batch_size=[2, 5])
    t = CatFrames(N=2, dim=-1, in_keys=["obs"], out_keys=["out"], padding=padding, padding_value=-1)
    out = t.unfolding(td.clone())["out"]
    pad = -1.0 if padding == "constant" else None
    assert out[0].tolist() == [
        [pad or 10, 10], [10, 11], [11, 12], [pad or 13, 13], [13, 14]
    ]  # fmt: skip
    assert out[1].tolist() == [[pad or 10, 10], [10, 11], [11, 12], [12, 13], [13, 14]]
    assert torch.equal(t(td.clone())["out"], out)


def test_rgb_to_grayscale_hand_values():
    from rl_envs.transforms.functional import rgb_to_grayscale

    # pure red, green and blue pixels, and one mixed pixel
    img = torch.tensor([[1.0, 0.0, 0.0, 0.5], [0.0, 1.0, 0.0, 0.5], [0.0, 0.0, 1.0, 1.0]]).reshape(
        3, 1, 4
    )
    gray = rgb_to_grayscale(img)
    assert gray.shape == (1, 1, 4)
    expected = [0.2989, 0.587, 0.114, 0.2989 * 0.5 + 0.587 * 0.5 + 0.114]
    assert gray.flatten().tolist() == pytest.approx(expected, abs=1e-6)
    batch = torch.stack([img, 2 * img])  # [2, 3, 1, 4]
    three = rgb_to_grayscale(batch, num_output_channels=3)
    assert three.shape == (2, 3, 1, 4)
    assert three[1, 2].flatten().tolist() == pytest.approx([2 * v for v in expected], abs=1e-6)
    pixels = torch.tensor([100, 200, 50], dtype=torch.uint8).reshape(3, 1, 1)
    assert rgb_to_grayscale(pixels).dtype == torch.uint8
    assert rgb_to_grayscale(pixels).item() == 152  # 152.99 truncated


def test_rgb_to_grayscale_errors():
    from rl_envs.transforms.functional import rgb_to_grayscale

    with pytest.raises(TypeError, match=r"expected 3 \(RGB\) channels at dim -3 of img, got 4"):
        rgb_to_grayscale(torch.zeros(4, 2, 2))
    with pytest.raises(TypeError, match=r"3 dims or more\), got shape \(2, 2\)"):
        rgb_to_grayscale(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="num_output_channels must be 1 or 3, got 2"):
        rgb_to_grayscale(torch.zeros(3, 2, 2), num_output_channels=2)
