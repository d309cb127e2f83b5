"""DecodeVideoTransform: VideoClipRef entries decoded to frames (on a replay buffer's samples)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from rl_core import Transform
from rl_core.keys import NestedKey
from rl_envs.transforms.video_clip import VideoClipRef


class DecodeVideoTransform(Transform):
    """Replaces :class:`~rl_envs.transforms.VideoClipRef` entries by their decoded frames
    (TorchRL's ``DecodeVideoTransform``).

    Meant as a replay buffer's ``transform``: the storage holds the lazy references (a file
    path and a frame number per step), a sample's references are decoded with PyAV into uint8
    RGB ``[*batch, 3, H, W]`` frames (``pip install "rl-envs[video]"``); the frames a sample
    takes from one file are read in one pass over it. In rl-buffers, keep the references in a
    ``ListStorage``: ``LazyTensorStorage`` holds tensor leaves only (and ``SliceSampler``
    needs it). A read-side codec: it has no inverse, and entries missing from a TensorDict are
    left alone.

    Args:
        in_keys: the entries holding references (keyword-only, required).
        out_keys: where the frames go. Defaults to ``in_keys`` (replaced in place).
        device: the device of the frames. Defaults to each reference's ``out_device``, else
            its own device.
        dtype: the dtype of the frames. Defaults to each reference's ``out_dtype``, else
            uint8.

    Raises:
        TypeError: ``in_keys`` is missing; an ``in_keys`` entry is not a ``VideoClipRef``
            (the message names the key).

    Examples:
        >>> t = DecodeVideoTransform(in_keys=["frame"], out_keys=["pixels"])
        >>> t.in_keys, t.out_keys
        (['frame'], ['pixels'])
    """

    def __init__(
        self,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        if in_keys is None:
            raise TypeError(
                "DecodeVideoTransform: in_keys is required (the entries holding VideoClipRef "
                "references), got None."
            )
        if dtype is not None and not isinstance(dtype, torch.dtype):
            raise TypeError(
                f"DecodeVideoTransform: dtype must be a torch.dtype, got {type(dtype).__name__}."
            )
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self.device = None if device is None else torch.device(device)
        self.dtype = dtype

    def _call(self, tensordict: Any) -> Any:
        for in_key, out_key in zip(self.in_keys, self.out_keys, strict=True):
            value = tensordict.get(in_key, None)
            if value is None:
                continue
            if not isinstance(value, VideoClipRef):
                raise TypeError(
                    f"DecodeVideoTransform: the entry {in_key!r} must hold a VideoClipRef, got "
                    f"{type(value).__name__}."
                )
            frames = value.decode(device=self.device, dtype=self.dtype)
            if out_key == in_key:
                tensordict.del_(in_key)
            tensordict.set(out_key, frames)
        return tensordict


__all__ = ["DecodeVideoTransform"]
