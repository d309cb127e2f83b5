"""Frames to images: normalising, grids, and PNG, GIF and MP4 files read back."""

import numpy as np
import pytest
import torch

from rl_envs.render import (
    compose_frame_grid,
    encode_gif,
    encode_video,
    normalize_frame,
    normalize_frame_output,
    write_png,
)

Image = pytest.importorskip("PIL.Image", reason='pip install "rl-envs[video]"')


def _colour(rgb, h=4, w=6):
    return np.broadcast_to(np.array(rgb, dtype=np.uint8), (h, w, 3)).copy()


def test_normalize_frame_layouts_and_ranges():
    chw = torch.zeros(3, 2, 5)
    chw[0] = 1.0  # red, as floats in [0, 1]
    out = normalize_frame(chw)
    assert out.shape == (2, 5, 3)
    assert out.dtype == np.uint8
    assert out[0, 0].tolist() == [255, 0, 0]
    grey = normalize_frame(np.full((2, 2), 7, dtype=np.int64))
    assert grey[1, 1].tolist() == [7, 7, 7]
    rgba = normalize_frame(np.full((2, 2, 4), 9, dtype=np.uint8))
    assert rgba.shape == (2, 2, 3)
    assert normalize_frame(np.array([[[0.5]]]))[0, 0].tolist() == [128, 128, 128]
    with pytest.raises(ValueError, match=r"expected an image .* got shape \(2, 2, 2, 2\)"):
        normalize_frame(np.zeros((2, 2, 2, 2)))
    cams = normalize_frame_output([np.zeros((2, 2, 3)), np.ones((2, 2, 3))])
    assert list(cams) == ["camera_0", "camera_1"]
    assert list(normalize_frame_output(np.zeros((2, 2, 3)))) == ["default"]
    with pytest.raises(ValueError, match="returned None"):
        normalize_frame_output(None)


def test_compose_frame_grid_by_hand():
    red, green, blue = _colour([255, 0, 0]), _colour([0, 255, 0]), _colour([0, 0, 255], 2, 3)
    grid = compose_frame_grid([red, green, blue], "grid")  # 2 columns, 2 rows of 4 x 6 cells
    assert grid.shape == (8, 12, 3)
    assert grid[0, 0].tolist() == [255, 0, 0]
    assert grid[0, 6].tolist() == [0, 255, 0]
    assert grid[4, 0].tolist() == [0, 0, 255]
    assert grid[7, 5].tolist() == [0, 0, 0]  # the smaller frame is padded with black
    assert compose_frame_grid([red, green], "vertical").shape == (8, 6, 3)
    assert compose_frame_grid([red, green], "horizontal")[0, 6].tolist() == [0, 255, 0]
    assert compose_frame_grid([red, green], "single").tolist() == red.tolist()
    with pytest.raises(ValueError, match="expected at least one frame"):
        compose_frame_grid([])
    with pytest.raises(ValueError, match="expected layout in"):
        compose_frame_grid([red], "diagonal")


def test_png_and_gif_read_back(tmp_path):
    red = _colour([255, 0, 0])
    png = write_png(red, tmp_path / "a" / "frame.png")
    assert np.asarray(Image.open(png).convert("RGB")).tolist() == red.tolist()
    frames = [_colour([255, 0, 0]), _colour([0, 0, 255]), _colour([0, 255, 0])]
    gif = encode_gif(frames, tmp_path / "roll.gif", fps=20)
    with Image.open(gif) as image:
        assert image.n_frames == 3
        assert image.info["duration"] == 50
        seen = []
        for i in range(3):
            image.seek(i)
            seen.append(np.asarray(image.convert("RGB"))[0, 0].tolist())
    assert seen == [[255, 0, 0], [0, 0, 255], [0, 255, 0]]
    with pytest.raises(ValueError, match=r"frames of one shape"):
        encode_gif([red, _colour([0, 0, 0], 2, 2)], tmp_path / "bad.gif", fps=10)
    with pytest.raises(ValueError, match="expected fps > 0"):
        encode_gif([red], tmp_path / "bad.gif", fps=0)


def test_mp4_reads_back_with_its_frame_count_and_padded_size(tmp_path):
    av = pytest.importorskip("av", reason='pip install "rl-envs[video]"')
    frames = [_colour([v, v, v], 5, 7) for v in (0, 120, 250)]
    path = encode_video(frames, tmp_path / "roll.mp4", fps=10)
    with av.open(str(path)) as container:
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(decoded) == 3
    assert decoded[0].shape == (6, 8, 3)  # H.264 needs even sizes: padded
    # Lossy, but a flat grey survives within a few levels.
    assert abs(int(decoded[1][2, 3].mean()) - 120) <= 4
