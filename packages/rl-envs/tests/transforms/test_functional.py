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
