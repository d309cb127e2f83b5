"""Crop: a fixed window of images, on a batched pixel env and on data."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import Bounded, Composite, EnvBase, TransformedEnv, check_env_specs
from rl_envs.transforms import CenterCrop, Crop


class PixelCounter(EnvBase):
    """uint8 pixels [*B, 3, 6, 8] holding ``100 * c + 10 * row + col + step`` (mod 256)."""

    def __init__(self, batch_size=(2,)):
        super().__init__(batch_size=batch_size)
        b = tuple(self.batch_size)
        self.observation_spec = Composite(
            pixels=Bounded(0, 255, shape=(*b, 3, 6, 8), dtype=torch.uint8), shape=b
        )
        self.action_spec = Bounded(0, 1, shape=(*b, 1))
        c, r, w = torch.meshgrid(torch.arange(3), torch.arange(6), torch.arange(8), indexing="ij")
        self.grid = (100 * c + 10 * r + w).expand(*b, 3, 6, 8)
        self.t = 0

    def _frame(self):
        pixels = ((self.grid + self.t) % 256).to(torch.uint8)
        return TensorDict(pixels=pixels, batch_size=self.batch_size)

    def _reset(self, tensordict, **kwargs):
        self.t = 0
        return self._frame()

    def _step(self, tensordict):
        self.t += 1
        out = self._frame()
        out["reward"] = torch.zeros(*self.batch_size, 1)
        out["done"] = torch.zeros(*self.batch_size, 1, dtype=torch.bool)
        return out

    def _set_seed(self, seed):
        pass


def test_crops_the_window_at_top_left_of_a_batched_pixel_env():
    env = TransformedEnv(PixelCounter(), Crop(3, 2, top=1, left=4))
    check_env_specs(env)
    spec = env.observation_spec["pixels"]
    # TorchRL's order: w = 3 rows, h = 2 columns
    assert spec.shape == (2, 3, 3, 2)
    assert spec.dtype == torch.uint8
    traj = env.rollout(2, lambda td: td.set("action", torch.zeros(2, 1)))
    # Channel 2, row 1 + 2, col 4 + 1, after 2 steps: 200 + 30 + 5 + 2.
    assert traj["next", "pixels"][1, 1, 2, 2, 1].item() == 237
    ref = PixelCounter().reset()["pixels"][..., 1:4, 4:6]
    assert torch.equal(traj["pixels"][:, 0], ref)


def test_default_height_out_keys_and_errors():
    out = Crop(2, in_keys=["img"], out_keys=["crop"])(
        TensorDict(img=torch.arange(16.0).reshape(1, 4, 4))
    )
    assert out["crop"].tolist() == [[[0.0, 1.0], [4.0, 5.0]]]
    with pytest.raises(ValueError, match="Crop: expected w, h >= 1"):
        Crop(0)


def test_windows_past_the_edges_hold_zeros_as_torchvision():
    image = torch.tensor([[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]])  # [1, 2, 3]
    # Crop: rows 1..3 and columns 2..3 of a 2 x 3 image: only (1, 2) = 6 is inside.
    crop = Crop(3, 2, top=1, left=2, in_keys=["img"])(TensorDict(img=image.clone()))
    assert crop["img"].tolist() == [[[6.0, 0.0], [0.0, 0.0], [0.0, 0.0]]]
    # CenterCrop: 2 missing rows go one above, one below; 2 missing columns one each side.
    centre = CenterCrop(4, 5, in_keys=["img"])(TensorDict(img=image.clone()))
    assert centre["img"].tolist() == [
        [
            [0.0, 0.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 2.0, 3.0, 0.0],
            [0.0, 4.0, 5.0, 6.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.0],
        ]
    ]
    # One missing row goes below; then the middle column of three is kept.
    centre = CenterCrop(3, 1, in_keys=["img"])(TensorDict(img=image.clone()))
    assert centre["img"].tolist() == [[[2.0], [5.0], [0.0]]]
    # In an env the spec takes the new size and its bounds hold the zeros.
    env = TransformedEnv(PixelCounter(), Crop(4, 4, top=3))
    spec = env.observation_spec["pixels"]
    assert spec.shape[-2:] == (4, 4)
    assert bool(spec.is_in(torch.zeros(spec.shape, dtype=spec.dtype)))
