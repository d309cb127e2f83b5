"""Stacking helpers for ragged token sequences: padded and nested tensors."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def _check(list_of_tensors: Sequence[torch.Tensor], where: str) -> list[torch.Tensor]:
    tensors = list(list_of_tensors)
    if not tensors:
        raise ValueError(f"{where}: expected a non-empty sequence of tensors, got an empty one.")
    bad = [type(t).__name__ for t in tensors if not isinstance(t, torch.Tensor)]
    if bad:
        raise TypeError(f"{where}: expected tensors, got {bad[:3]}.")
    ndims = {t.ndim for t in tensors}
    if len(ndims) != 1:
        raise ValueError(f"{where}: expected tensors of one number of dims, got {sorted(ndims)}.")
    return tensors


def as_padded_tensor(
    list_of_tensors: Sequence[torch.Tensor],
    dim: int = 0,
    stack_dim: int = 0,
    *,
    padding_value: float | int | bool = 0,
    padding_side: str = "right",
) -> torch.Tensor:
    """Stacks tensors of different lengths along ``dim``, padding them to the longest.

    Args:
        list_of_tensors: tensors with the same number of dims, equal except along ``dim``.
        dim: the ragged dim (of each tensor).
        stack_dim: where the new (batch) dim goes in the result.
        padding_value: the value of padded positions.
        padding_side: ``"right"`` (pad after) or ``"left"`` (pad before, as prompts are).

    Returns:
        A tensor of shape ``[N, ..., max_len, ...]`` (the new dim at ``stack_dim``).

    Examples:
        >>> import torch
        >>> from rl_llm.data import as_padded_tensor
        >>> as_padded_tensor([torch.tensor([1, 2, 3]), torch.tensor([4])]).tolist()
        [[1, 2, 3], [4, 0, 0]]
        >>> as_padded_tensor([torch.tensor([1, 2]), torch.tensor([4])], padding_side="left",
        ...     padding_value=-1).tolist()
        [[1, 2], [-1, 4]]
    """
    tensors = _check(list_of_tensors, "as_padded_tensor")
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"as_padded_tensor: expected padding_side 'left' or 'right', got {padding_side!r}."
        )
    ndim = tensors[0].ndim
    if not -ndim <= dim < ndim:
        raise ValueError(f"as_padded_tensor: dim {dim} is out of range for {ndim}-d tensors.")
    dim = dim % ndim
    longest = max(t.shape[dim] for t in tensors)
    padded = []
    for t in tensors:
        missing = longest - t.shape[dim]
        if missing:
            shape = list(t.shape)
            shape[dim] = missing
            pad = torch.full(shape, padding_value, dtype=t.dtype, device=t.device)
            t = torch.cat([t, pad] if padding_side == "right" else [pad, t], dim)
        padded.append(t)
    return torch.stack(padded, stack_dim)


def as_nested_tensor(list_of_tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """A nested (jagged) tensor of tensors of different lengths along their first dim.

    Examples:
        >>> import torch
        >>> from rl_llm.data import as_nested_tensor
        >>> nt = as_nested_tensor([torch.tensor([1, 2, 3]), torch.tensor([4])])
        >>> nt.is_nested, [t.tolist() for t in nt.unbind()]
        (True, [[1, 2, 3], [4]])
    """
    tensors = _check(list_of_tensors, "as_nested_tensor")
    return torch.nested.nested_tensor(tensors, layout=torch.jagged)
