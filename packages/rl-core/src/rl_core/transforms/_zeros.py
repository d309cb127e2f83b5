"""Zero tensors for the resets of transforms that keep running values (``RewardSum``,
``StepCounter``).

A reset comes every few steps, and in a rollout loop a lone ``torch.zeros`` costs several
microseconds there: its code has gone cold since the previous reset (the env, the policy and
TensorDict bookkeeping ran in between). On the CPU, :func:`zeros` cuts zeros from a block of
64 with one ``unbind`` (one torch call per 64 zeros). Each is handed out once and never
written here, so it is what ``torch.zeros`` gives (a contiguous tensor of zeros), except that
it shares its storage with the other rows of its block.
"""

from __future__ import annotations

from typing import Any

import torch

_ROWS = 64
_function_modes = torch._C._len_torch_function_stack


def on_cpu(device: torch.device | None) -> bool:
    """Whether ``torch.zeros(..., device=device)`` allocates on the CPU. ``None`` is the
    default device: the CPU unless ``torch.set_default_device`` chose another, which acts
    through a torch function mode (with none active, the CPU, read without the cost of
    ``torch.get_default_device``)."""
    if device is None:
        return _function_modes() == 0 or torch.get_default_device().type == "cpu"
    return device.type == "cpu"


def zeros(
    owner: Any, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | None
) -> torch.Tensor:
    """``torch.zeros(shape, dtype=dtype, device=device)``; on the CPU, a row of a block of
    zeros kept in ``owner.__dict__`` (one block per shape and dtype).

    Examples:
        >>> import torch
        >>> class Owner:
        ...     pass
        >>> owner = Owner()
        >>> a, b = zeros(owner, (1,), torch.int64, None), zeros(owner, (1,), torch.int64, None)
        >>> a.tolist(), b.tolist(), a.data_ptr() != b.data_ptr(), a.is_contiguous()
        ([0], [0], True, True)
    """
    if not on_cpu(device):
        return torch.zeros(shape, dtype=dtype, device=device)
    pools = owner.__dict__.setdefault("_zero_rows", {})
    key = (shape, dtype)
    pool = pools.get(key)
    if not pool:
        pool = pools[key] = list(torch.zeros((_ROWS, *shape), dtype=dtype).unbind(0))
        pool.reverse()  # popped from the end: the first row first
    return pool.pop()


__all__ = ["on_cpu", "zeros"]
