"""Video files decoded with PyAV (which ships its own FFmpeg): frames picked by timestamp."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = ["decode_frames", "import_av"]


def import_av(where: str) -> Any:
    """The ``av`` module, or an ImportError naming the extra that installs it."""
    try:
        import av
    except ImportError as error:
        raise ImportError(
            f'{where} decodes videos with PyAV: pip install "rl-buffers[lerobot]" (or pass '
            f"decode_video=False to leave the video columns out)"
        ) from error
    return av


def decode_frames(where: str, path: Path, timestamps: Tensor, fps: float) -> Tensor:
    """The frames of the video ``path`` shown at ``timestamps`` (seconds), as ``uint8``
    ``[len(timestamps), C, H, W]`` RGB.

    Each timestamp takes the decoded frame nearest to it; one farther than half a frame
    period (``0.5 / fps``) from every frame is an error (the video does not cover it).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: ``path`` is not a readable video, or a timestamp has no frame; the
            message names the file.
    """
    av = import_av(where)
    if not path.exists():
        raise FileNotFoundError(f"{where}: the video {path} does not exist.")
    frames: list[np.ndarray] = []
    times: list[float] = []
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise ValueError(f"{where}: {path} has no video stream.")
            stream = container.streams.video[0]
            for frame in container.decode(stream):
                if frame.pts is None or frame.time_base is None:
                    times.append(len(times) / fps)
                else:
                    times.append(float(frame.pts * frame.time_base))
                frames.append(frame.to_ndarray(format="rgb24"))
    except (av.error.FFmpegError, OSError) as error:
        raise ValueError(
            f"{where}: {path} is not a readable video ({error}); a truncated download or "
            f"another format. Remove it to download it again."
        ) from error
    if not frames:
        raise ValueError(f"{where}: {path} holds no frame.")
    shown = torch.tensor(times, dtype=torch.float64)
    wanted = timestamps.to(torch.float64).reshape(-1)
    gap = (wanted[:, None] - shown[None, :]).abs()
    distance, index = gap.min(dim=1)
    far = distance > 0.5 / fps
    if far.any():
        first = int(far.nonzero()[0])
        raise ValueError(
            f"{where}: {path} has no frame at {float(wanted[first]):.4f} s (its {len(frames)} "
            f"frames span {times[0]:.4f} s to {times[-1]:.4f} s at {fps} fps); the video "
            f"and the parquet frames disagree."
        )
    stacked = torch.from_numpy(np.stack(frames))  # [T, H, W, C]
    return stacked[index].permute(0, 3, 1, 2).contiguous()
