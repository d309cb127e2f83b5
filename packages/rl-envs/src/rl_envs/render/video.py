"""Frames to images: normalising, laying out cameras, and writing PNG, GIF and MP4 files.

PNG and GIF need pillow (``pip install "rl-envs[video]"``), MP4 needs PyAV (the same extra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch


def normalize_frame(frame: Any) -> np.ndarray:
    """One image as a ``[H, W, 3]`` uint8 array.

    Accepts numpy arrays and tensors, ``HWC`` or ``CHW`` (1, 3 or 4 channels; alpha is
    dropped, grey is repeated) or ``HW``; floats are read as ``[0, 1]`` intensities.

    Raises:
        ValueError: not an image of 2 or 3 dims with 1, 3 or 4 channels.

    Examples:
        >>> import torch
        >>> from rl_envs.render import normalize_frame
        >>> frame = normalize_frame(torch.ones(3, 4, 5))
        >>> frame.shape, frame.dtype, int(frame.max())
        ((4, 5, 3), dtype('uint8'), 255)
    """
    array = frame.detach().cpu().numpy() if torch.is_tensor(frame) else np.asarray(frame)
    if array.ndim == 3 and array.shape[0] in (1, 3, 4) and array.shape[-1] not in (1, 3, 4):
        array = np.moveaxis(array, 0, -1)
    if array.ndim == 2:
        array = array[..., None]
    if array.ndim != 3 or array.shape[-1] not in (1, 3, 4) or 0 in array.shape:
        raise ValueError(
            f"normalize_frame: expected an image [H, W, C] or [C, H, W] with C in (1, 3, 4), "
            f"got shape {tuple(array.shape)}."
        )
    if array.dtype != np.uint8:
        if np.issubdtype(array.dtype, np.floating):
            array = np.clip(np.nan_to_num(array) * 255.0 + 0.5, 0, 255)
        else:
            array = np.clip(array, 0, 255)
        array = array.astype(np.uint8)
    if array.shape[-1] == 1:
        array = np.repeat(array, 3, axis=-1)
    return np.ascontiguousarray(array[..., :3])


def normalize_frame_output(output: Any) -> dict[str, np.ndarray]:
    """What a renderer returned (one image, a list of images, or a dict camera -> image) as a
    dict camera name -> ``[H, W, 3]`` uint8 (one image is camera ``"default"``, a list's are
    ``"camera_0"``, ...).

    Raises:
        ValueError: nothing (None or empty) was returned, or an entry is not an image.
    """
    if output is None:
        raise ValueError("normalize_frame_output: the renderer returned None (no frame).")
    if isinstance(output, Mapping):
        frames = {str(name): normalize_frame(image) for name, image in output.items()}
    elif isinstance(output, list | tuple):
        frames = {f"camera_{i}": normalize_frame(image) for i, image in enumerate(output)}
    else:
        frames = {"default": normalize_frame(output)}
    if not frames:
        raise ValueError("normalize_frame_output: the renderer returned no frame.")
    return frames


def compose_frame_grid(
    frames: Sequence[np.ndarray],
    layout: Literal["single", "grid", "horizontal", "vertical"] = "grid",
) -> np.ndarray:
    """Several cameras' images in one: side by side, stacked, or in a near-square grid (rows
    filled left to right; smaller images are padded with black at the bottom and right).
    ``"single"`` keeps the first image.

    Raises:
        ValueError: no frame, or an unknown layout.

    Examples:
        >>> import numpy as np
        >>> from rl_envs.render import compose_frame_grid
        >>> frames = [np.zeros((2, 3, 3), np.uint8)] * 3
        >>> compose_frame_grid(frames, "horizontal").shape, compose_frame_grid(frames).shape
        ((2, 9, 3), (4, 6, 3))
    """
    images = [normalize_frame(f) for f in frames]
    if not images:
        raise ValueError("compose_frame_grid: expected at least one frame, got none.")
    if layout == "single":
        return images[0]
    n = len(images)
    if layout == "horizontal":
        rows, cols = 1, n
    elif layout == "vertical":
        rows, cols = n, 1
    elif layout == "grid":
        cols = int(np.ceil(np.sqrt(n)))
        rows = int(np.ceil(n / cols))
    else:
        raise ValueError(
            f"compose_frame_grid: expected layout in ('single', 'grid', 'horizontal', "
            f"'vertical'), got {layout!r}."
        )
    height = max(image.shape[0] for image in images)
    width = max(image.shape[1] for image in images)
    canvas = np.zeros((rows * height, cols * width, 3), dtype=np.uint8)
    for i, image in enumerate(images):
        r, c = divmod(i, cols)
        canvas[r * height : r * height + image.shape[0], c * width : c * width + image.shape[1]] = (
            image
        )
    return canvas


def _pillow() -> Any:
    try:
        from PIL import Image
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            'PNG and GIF writing needs pillow: pip install "rl-envs[video]"', name="PIL"
        ) from None
    return Image


def _parent(path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_png(frame: Any, path: str | Path) -> Path:
    """Writes one image (see :func:`normalize_frame`) as a PNG; returns the path."""
    image = _pillow().fromarray(normalize_frame(frame))
    path = _parent(path)
    image.save(path, format="PNG")
    return path


def _check_frames(frames: Sequence[Any], fps: float, where: str) -> list[np.ndarray]:
    if not len(frames):
        raise ValueError(f"{where}: expected at least one frame, got none.")
    if not fps > 0:
        raise ValueError(f"{where}: expected fps > 0, got {fps!r}.")
    images = [normalize_frame(f) for f in frames]
    shapes = {image.shape for image in images}
    if len(shapes) > 1:
        raise ValueError(f"{where}: expected frames of one shape, got {sorted(shapes)}.")
    return images


def encode_gif(frames: Sequence[Any], path: str | Path, fps: float) -> Path:
    """Writes the frames as a looping GIF at ``fps`` (each frame shown ``1000 / fps`` ms,
    rounded to GIF's 10 ms steps); returns the path.

    Raises:
        ValueError: no frame, frames of several shapes, or ``fps <= 0``.
    """
    images = _check_frames(frames, fps, "encode_gif")
    image_cls = _pillow()
    pictures = [image_cls.fromarray(image) for image in images]
    path = _parent(path)
    pictures[0].save(
        path,
        format="GIF",
        save_all=True,
        append_images=pictures[1:],
        duration=max(10, round(1000.0 / fps / 10) * 10),
        loop=0,
        disposal=1,
    )
    return path


def encode_video(
    frames: Sequence[Any], path: str | Path, fps: float, *, video_codec: str | None = None
) -> Path:
    """Writes the frames as a video (MP4 with H.264 by default) through PyAV; odd sizes are
    padded to even ones (H.264 needs them); returns the path.

    Raises:
        ValueError: no frame, frames of several shapes, or ``fps <= 0``.
        ModuleNotFoundError: PyAV is not installed.
    """
    images = _check_frames(frames, fps, "encode_video")
    try:
        import av
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            'MP4 writing needs PyAV: pip install "rl-envs[video]"', name="av"
        ) from None
    from fractions import Fraction

    height, width = images[0].shape[:2]
    pad_h, pad_w = height % 2, width % 2
    path = _parent(path)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(
            video_codec or "libx264", rate=Fraction(fps).limit_denominator(1000)
        )
        stream.width, stream.height = width + pad_w, height + pad_h
        stream.pix_fmt = "yuv420p"
        for image in images:
            if pad_h or pad_w:
                image = np.pad(image, ((0, pad_h), (0, pad_w), (0, 0)))
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path
