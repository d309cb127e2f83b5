"""Pure tensor functions behind the transforms (TorchRL's ``torchrl.envs.transforms.functional``):
``cat_frames``, the window of :class:`~rl_envs.transforms.CatFrames` on a trajectory, and
``rgb_to_grayscale``."""

from __future__ import annotations

import torch

_PADDINGS = ("same", "constant")


def cat_frames(
    tensor: torch.Tensor,
    N: int,  # TorchRL's name
    dim: int,
    *,
    padding: str = "same",
    padding_value: float = 0.0,
    time_dim: int = -1,
    done_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Concatenates, at each time step ``t``, the frames ``t - N + 1, ..., t`` along ``dim``.

    Slots of a window that fall before the trajectory (``t - N + 1 + k < 0``), or that
    ``done_mask`` flags, are padded: with ``padding="same"`` by the window's first slot that is
    not padded, with ``"constant"`` by ``padding_value``.

    Args:
        tensor: ``[*B, T, *F]``, time at ``time_dim``.
        N: the window length (>= 1).
        dim: the (negative) dim of ``tensor`` the frames are concatenated along; a feature
            dim, after ``time_dim``.
        padding: ``"same"`` or ``"constant"`` (keyword-only).
        padding_value: the constant padding (keyword-only).
        time_dim: the (negative) time dim of ``tensor`` (keyword-only). Defaults to -1.
        done_mask: ``[*B, T, N]`` bool, True for the slots of each window to pad (those before
            the window's episode start); ``None``: one trajectory, only slots before index 0
            are padded (keyword-only).

    Returns:
        ``tensor`` with its size along ``dim`` multiplied by ``N``; same dtype and device.

    Raises:
        ValueError: ``N < 1``, a non-negative ``dim``/``time_dim``, ``dim`` not after
            ``time_dim``, an unknown ``padding``, or a ``done_mask`` of the wrong shape.

    Examples:
        >>> frames = torch.arange(8.0).view(4, 2)  # 4 steps of 2 features
        >>> cat_frames(frames, N=3, dim=-1, time_dim=-2, padding="constant")[1].tolist()
        [0.0, 0.0, 0.0, 1.0, 2.0, 3.0]
        >>> cat_frames(frames, N=3, dim=-1, time_dim=-2)[1].tolist()
        [0.0, 1.0, 0.0, 1.0, 2.0, 3.0]
    """
    if not isinstance(N, int) or isinstance(N, bool) or N < 1:
        raise ValueError(f"cat_frames: expected N as an int >= 1, got {N!r}.")
    if padding not in _PADDINGS:
        raise ValueError(f"cat_frames: padding must be one of {_PADDINGS}, got {padding!r}.")
    if dim >= 0 or time_dim >= 0:
        raise ValueError(
            f"cat_frames: expected negative dim and time_dim (counted from the last dim), got "
            f"dim={dim}, time_dim={time_dim}."
        )
    if not time_dim < dim or -time_dim > tensor.ndim:
        raise ValueError(
            f"cat_frames: expected dim after time_dim within a tensor of {tensor.ndim} dims, got "
            f"dim={dim}, time_dim={time_dim}."
        )
    t_axis = tensor.ndim + time_dim
    length = tensor.shape[t_axis]
    batch = tensor.shape[:t_axis]
    steps = torch.arange(length, device=tensor.device)
    source = steps.unsqueeze(-1) - (N - 1) + torch.arange(N, device=tensor.device)  # [T, N]
    if done_mask is None:
        pad = (source < 0).expand(*batch, length, N)
    else:
        if tuple(done_mask.shape) != (*batch, length, N):
            raise ValueError(
                f"cat_frames: expected done_mask of shape {(*batch, length, N)} (batch, time, "
                f"N), got {tuple(done_mask.shape)}."
            )
        pad = done_mask.to(torch.bool) | (source < 0)
    # the first slot of each window that is not padded: its source step pads the others
    first = (~pad).to(torch.int64).argmax(-1, keepdim=True)  # [*B, T, 1]
    first_source = source.expand_as(pad).gather(-1, first)
    index = torch.where(pad, first_source, source.expand_as(pad)).clamp_min(0)  # [*B, T, N]
    feature = (1,) * (tensor.ndim - t_axis - 1)
    out = []
    for k in range(N):
        idx = index[..., k].reshape(*batch, length, *feature).expand_as(tensor)
        frames = tensor.gather(t_axis, idx)
        if padding == "constant":
            mask = pad[..., k].reshape(*batch, length, *feature)
            frames = torch.where(mask, torch.full_like(frames, padding_value), frames)
        out.append(frames)
    return torch.cat(out, dim)


# ITU-R BT.601 luma weights, as TorchRL's (and torchvision's) rgb_to_grayscale
_LUMA = (0.2989, 0.587, 0.114)


def rgb_to_grayscale(img: torch.Tensor, num_output_channels: int = 1) -> torch.Tensor:
    """The luma of RGB images: ``0.2989 R + 0.587 G + 0.114 B`` (TorchRL's function).

    Args:
        img: ``[..., 3, H, W]`` images (channels third from last), any dtype; an integer
            result is truncated towards zero when cast back to it.
        num_output_channels: 1 (``[..., 1, H, W]``) or 3 (the luma repeated in three
            channels, ``[..., 3, H, W]``, an expanded view).

    Returns:
        The grayscale images, in ``img``'s dtype and on its device.

    Raises:
        TypeError: ``img`` has fewer than 3 dims or not 3 channels at dim -3.
        ValueError: ``num_output_channels`` is not 1 or 3.

    Examples:
        >>> img = torch.tensor([100, 200, 50], dtype=torch.uint8).reshape(3, 1, 1)
        >>> rgb_to_grayscale(img).flatten().tolist()  # 29.89 + 117.4 + 5.7 = 152.99
        [152]
        >>> rgb_to_grayscale(torch.ones(2, 3, 4, 4), num_output_channels=3).shape
        torch.Size([2, 3, 4, 4])
    """
    if img.ndim < 3:
        raise TypeError(
            f"rgb_to_grayscale: expected img of shape [..., 3, H, W] (3 dims or more), got "
            f"shape {tuple(img.shape)}."
        )
    if img.shape[-3] != 3:
        raise TypeError(
            f"rgb_to_grayscale: expected 3 (RGB) channels at dim -3 of img, got "
            f"{img.shape[-3]} (shape {tuple(img.shape)})."
        )
    if num_output_channels not in (1, 3):
        raise ValueError(
            f"rgb_to_grayscale: num_output_channels must be 1 or 3, got {num_output_channels!r}."
        )
    red, green, blue = img.unbind(-3)
    dtype = img.dtype if img.dtype.is_floating_point else torch.get_default_dtype()
    luma = _LUMA[0] * red.to(dtype) + _LUMA[1] * green.to(dtype) + _LUMA[2] * blue.to(dtype)
    luma = luma.to(img.dtype).unsqueeze(-3)
    return luma.expand(img.shape) if num_output_channels == 3 else luma


__all__ = ["cat_frames", "rgb_to_grayscale"]
