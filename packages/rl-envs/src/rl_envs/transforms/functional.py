"""Pure tensor functions behind the transforms (TorchRL's ``torchrl.envs.transforms.functional``):
``cat_frames``, the window of :class:`~rl_envs.transforms.CatFrames` on a trajectory."""

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


__all__ = ["cat_frames"]
