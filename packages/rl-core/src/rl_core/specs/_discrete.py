"""Helpers shared by the discrete specs: action masks and index checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from rl_core.specs._base import _fmt_shape


def _check_int(n: Any, where: str, name: str = "n") -> int:
    if isinstance(n, np.integer):
        n = int(n)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{where}: expected {name} to be an int, got {n!r}.")
    if n < 1:
        raise ValueError(f"{where}: expected {name} >= 1, got {n}.")
    return n


def _check_index_dtype(dtype: torch.dtype, where: str) -> None:
    if dtype.is_floating_point or dtype.is_complex or dtype is torch.bool:
        raise TypeError(
            f"{where}: expected an integer dtype for action indices (e.g. torch.int64), "
            f"got {dtype}."
        )


def _check_nvec(nvec: Any, where: str) -> torch.Tensor:
    """Validates ``nvec`` (a 1-d sequence or tensor of ints >= 1) as a CPU int64 tensor."""
    try:
        t = torch.as_tensor(nvec)
    except (TypeError, ValueError, RuntimeError):
        t = None
    if t is None or t.ndim != 1 or t.is_floating_point() or t.is_complex() or t.dtype is torch.bool:
        raise TypeError(
            f"{where}: expected nvec to be a 1-d sequence of ints (e.g. [3, 2]), got {nvec!r}."
        )
    if t.numel() == 0 or bool((t < 1).any()):
        raise ValueError(f"{where}: expected a non-empty nvec of ints >= 1, got {t.tolist()}.")
    return t.to(torch.int64).cpu().clone()


def _check_mask(
    mask: Any,
    shape: torch.Size,
    device: torch.device | None,
    where: str,
    nvec: torch.Tensor | None = None,
) -> torch.Tensor | None:
    """Validates an action mask (True = valid) and returns it expanded to ``shape``.

    Args:
        mask: ``None`` (every action valid) or a bool tensor broadcastable to ``shape``.
        shape: the full mask shape, ``(*batch, n)`` (``n = sum(nvec)`` for multi specs).
        device: the spec's device (the mask is moved there).
        where: the ``Class.method`` named in errors.
        nvec: for multi specs, the sizes of the sub-action blocks along the last dim; each
            block needs a valid choice.

    Raises:
        TypeError: the mask is not a bool tensor.
        ValueError: the mask does not broadcast to ``shape`` or leaves a row (or a
            sub-action block) without any valid action.
    """
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor) or mask.dtype is not torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(
            f"{where}: expected mask to be a bool tensor (True = valid action), got {got}."
        )
    try:
        mask = mask.expand(shape)
    except RuntimeError:
        raise ValueError(
            f"{where}: expected a mask broadcastable to shape {_fmt_shape(shape)}, got "
            f"{_fmt_shape(mask.shape)}."
        ) from None
    if device is not None:
        mask = mask.to(device)
    blocks = [mask] if nvec is None else mask.split(nvec.tolist(), dim=-1)
    for i, block in enumerate(blocks):
        if block.numel() and not bool(block.any(-1).all()):
            row = tuple(int(j) for j in (~block.any(-1)).nonzero()[0])
            part = "" if nvec is None else f" of sub-action {i}"
            raise ValueError(
                f"{where}: the mask leaves no valid action{part} at batch index {row}; every "
                f"row needs at least one True."
            )
    return mask


def _sample_masked(mask: torch.Tensor, size: torch.Size) -> torch.Tensor:
    """Draws one valid index per row of ``mask`` expanded to ``(*size, n)``, uniformly."""
    scores = torch.rand((*size, mask.shape[-1]), device=mask.device)
    return scores.masked_fill_(~mask, -1.0).argmax(-1)


def _nearest_valid(index: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Replaces each index by the closest valid one (ties go to the lower index)."""
    n = mask.shape[-1]
    arange = torch.arange(n, device=index.device)
    dist = (arange - index.unsqueeze(-1)).abs().to(torch.float32)
    return dist.masked_fill_(~mask, float("inf")).argmin(-1)


def _check_index_args(
    index: Any, values: Any, n: int, where: str, *, event_size: int | None = None
) -> None:
    """Checks the arguments of ``index``.

    ``values`` must have shape ``(*B, n)``; ``B`` is ``index.shape``, or, when
    ``event_size`` is given, ``index.shape[:-1]`` with ``index.shape[-1] == event_size``.
    """
    for name, t in (("index", index), ("tensor_to_index", values)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(
                f"{where}: expected {name} to be a torch.Tensor, got {type(t).__name__}."
            )
    batch = index.shape
    if event_size is not None:
        if index.ndim == 0 or index.shape[-1] != event_size:
            raise ValueError(
                f"{where}: expected an index whose last dim is {event_size}, got shape "
                f"{_fmt_shape(index.shape)}."
            )
        batch = index.shape[:-1]
    if values.ndim == 0 or values.shape[-1] != n or values.shape[:-1] != batch:
        raise ValueError(
            f"{where}: expected tensor_to_index of shape {_fmt_shape((*batch, n))} (one value "
            f"per action along the last dim, batch dims as the index), got "
            f"{_fmt_shape(values.shape)}."
        )


def _masked_out_failure(value: torch.Tensor, mask: torch.Tensor | None) -> str | None:
    """The ``is_in`` failure of a one-hot ``value`` selecting an action its mask forbids."""
    if mask is None:
        return None
    bad = (value.bool() & ~mask).any(-1)
    if bool(bad.any()):
        at = tuple(int(i) for i in bad.nonzero()[0])
        return f"selects a masked-out action at batch index {at}"
    return None
