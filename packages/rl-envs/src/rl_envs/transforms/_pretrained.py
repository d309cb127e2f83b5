"""What the pretrained-encoder transforms share: image preprocessing and weight loading."""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

# ImageNet's channel statistics, which the R3M and VIP ResNets were trained with
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def preprocess(images: torch.Tensor, size: int) -> torch.Tensor:
    """``[..., H, W, 3]`` uint8 (or ``[..., 3, H, W]`` float in [0, 1]) images to the float
    ``[..., 3, size, size]`` the encoders read: scaled to [0, 1], normalised by ImageNet's
    mean and std, resized (bilinear) when they are not ``size x size`` already.

    Raises:
        ValueError: the images have no 3-channel dim (last for uint8, third from last for
            floats).
    """
    if not images.dtype.is_floating_point:
        if images.shape[-1] != 3:
            raise ValueError(
                f"expected uint8 images [..., H, W, 3], got shape {tuple(images.shape)}."
            )
        images = images.movedim(-1, -3).to(torch.get_default_dtype()) / 255.0
    if images.ndim < 3 or images.shape[-3] != 3:
        raise ValueError(f"expected float images [..., 3, H, W], got shape {tuple(images.shape)}.")
    mean = torch.tensor(IMAGENET_MEAN, dtype=images.dtype, device=images.device)
    std = torch.tensor(IMAGENET_STD, dtype=images.dtype, device=images.device)
    images = (images - mean.view(3, 1, 1)) / std.view(3, 1, 1)
    if images.shape[-2:] != (size, size):
        batch = images.shape[:-3]
        flat = images.reshape(-1, *images.shape[-3:])
        flat = nn.functional.interpolate(flat, size=(size, size), mode="bilinear")
        images = flat.reshape(*batch, 3, size, size)
    return images


def load_checkpoint(
    where: str,
    *,
    weights: str | os.PathLike | None,
    url: str,
    download_path: str | os.PathLike | None,
) -> dict[str, Any]:
    """The checkpoint at ``weights`` (a local file), else the one published at ``url``
    (through ``torch.hub``'s cache in ``download_path``: a file already there is read without
    any download).

    Raises:
        FileNotFoundError: ``weights`` does not exist.
        RuntimeError: the download failed (offline), naming the URL and ``weights=``.
    """
    if weights is not None:
        if not os.path.isfile(weights):
            raise FileNotFoundError(
                f"{where}: weights={os.fspath(weights)!r} is not a file; give the path of a "
                f"checkpoint (e.g. downloaded from {url})."
            )
        return torch.load(weights, map_location="cpu", weights_only=True)
    try:
        return torch.hub.load_state_dict_from_url(
            url,
            model_dir=None if download_path is None else os.fspath(download_path),
            map_location="cpu",
            progress=False,
            weights_only=True,
        )
    except OSError as err:  # URLError, timeouts, refused connections
        raise RuntimeError(
            f"{where}: could not download the pretrained weights from {url} ({err}). Download "
            f"the file where this machine can, and pass weights=<its path>."
        ) from err


def convnet_state(checkpoint: dict[str, Any], key: str) -> dict[str, torch.Tensor]:
    """The convnet's state dict from a published checkpoint (``{key: {"module.convnet.<name>":
    tensor}}``) or from a plain state dict of the convnet."""
    state = checkpoint.get(key, checkpoint) if isinstance(checkpoint, dict) else checkpoint
    prefix = "module.convnet."
    if any(name.startswith(prefix) for name in state):
        return {name[len(prefix) :]: v for name, v in state.items() if name.startswith(prefix)}
    return dict(state)
