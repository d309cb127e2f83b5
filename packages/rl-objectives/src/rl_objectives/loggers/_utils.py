"""Checks and conversions shared by the loggers: scalars, videos, hyperparameters, GIFs."""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")


def check_name(owner: str, name: object) -> str:
    """Returns ``name`` if it is a usable metric name (letters, digits, ``_.-``, ``/``)."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name.split("/"):
        raise ValueError(
            f"{owner}: expected a metric name made of letters, digits, '_', '.', '-' and '/' "
            f"separators (e.g. 'train/reward'), got {name!r}."
        )
    return name


def as_float(owner: str, name: str, value: object) -> float:
    """Converts a Python number, a NumPy scalar or a one-element tensor to ``float``."""
    if isinstance(value, torch.Tensor | np.ndarray):
        count = value.size if isinstance(value, np.ndarray) else value.numel()
        if count != 1:
            raise ValueError(
                f"{owner}: {name!r} must hold one value, got a tensor of shape "
                f"{tuple(value.shape)}. Reduce it first (.mean(), .item())."
            )
        return float(value.item())
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    raise TypeError(
        f"{owner}: {name!r} must be a real number or a one-element tensor, got "
        f"{type(value).__name__}."
    )


def check_step(owner: str, step: object) -> int | None:
    """Returns ``step`` as an int (or ``None``); rejects negatives and non-integers."""
    if step is None:
        return None
    if isinstance(step, torch.Tensor) and step.numel() == 1 and not step.is_floating_point():
        step = int(step.item())
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise ValueError(f"{owner}: step must be a non-negative int or None, got {step!r}.")
    return int(step)


def video_frames(owner: str, video: object) -> torch.Tensor:
    """Checks a video and returns its frames as a ``uint8`` tensor of shape ``[T, H, W, C]``.

    Accepted: ``[T, C, H, W]`` or ``[B, T, C, H, W]`` (the ``B`` clips are placed side by
    side), ``C`` in ``{1, 3, 4}``, ``uint8`` values or floats in ``[0, 1]``.
    """
    if isinstance(video, np.ndarray):
        video = torch.from_numpy(video)
    if not isinstance(video, torch.Tensor):
        raise TypeError(f"{owner}: expected a video tensor, got {type(video).__name__}.")
    if video.ndim == 5:
        video = torch.cat(video.unbind(0), dim=-1)
    if video.ndim != 4 or video.shape[1] not in (1, 3, 4) or video.shape[0] == 0:
        raise ValueError(
            f"{owner}: expected a video of shape [T, C, H, W] or [B, T, C, H, W] with C in "
            f"(1, 3, 4) and T > 0, got shape {tuple(video.shape)}."
        )
    if video.dtype != torch.uint8:
        if not video.is_floating_point():
            raise TypeError(
                f"{owner}: expected uint8 frames or floats in [0, 1], got dtype {video.dtype}."
            )
        video = (video.detach().clamp(0, 1) * 255).round().to(torch.uint8)
    return video.detach().cpu().permute(0, 2, 3, 1).contiguous()


def write_gif(owner: str, frames: torch.Tensor, path: str | os.PathLike, fps: int) -> Path:
    """Writes ``[T, H, W, C]`` uint8 frames to an animated GIF with Pillow."""
    try:
        from PIL import Image
    except ImportError as err:
        raise ImportError(
            f'{owner} writes videos as GIF with Pillow: pip install "rl-objectives[video]".'
        ) from err
    if isinstance(fps, bool) or not isinstance(fps, int) or fps < 1:
        raise ValueError(f"{owner}: fps must be a positive int, got {fps!r}.")
    array = frames.numpy()
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[array.shape[-1]]
    images = [Image.fromarray(frame[..., 0] if mode == "L" else frame, mode) for frame in array]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images[0].save(
        path,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=max(1, round(1000 / fps)),
        loop=0,
    )
    return path


def flatten_hparams(owner: str, cfg: object, prefix: str = "") -> dict[str, Any]:
    """Flattens a nested mapping of hyperparameters to ``{"a.b": value}``."""
    if not isinstance(cfg, Mapping):
        raise TypeError(
            f"{owner}: expected a mapping of hyperparameters (a dict), got {type(cfg).__name__}."
        )
    flat: dict[str, Any] = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_hparams(owner, value, prefix=f"{name}."))
        else:
            flat[name] = value
    return flat


def scalar_hparam(value: Any) -> bool | int | float | str:
    """Keeps booleans, ints, finite floats and strings; turns anything else into its ``str``."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return str(value)


def histogram_data(owner: str, data: object) -> torch.Tensor:
    """Returns ``data`` as a flat float64 CPU tensor of finite values."""
    if isinstance(data, np.ndarray):
        data = torch.from_numpy(data)
    if not isinstance(data, torch.Tensor):
        raise TypeError(f"{owner}: expected a tensor or an array, got {type(data).__name__}.")
    flat = data.detach().reshape(-1).to("cpu", torch.float64)
    if flat.numel() == 0 or not torch.isfinite(flat).all():
        raise ValueError(
            f"{owner}: expected a non-empty tensor of finite values, got shape "
            f"{tuple(data.shape)} with {int((~torch.isfinite(flat)).sum())} non-finite values."
        )
    return flat
