"""Tensors cut from numpy blocks of rows, for transforms that write a few numbers per step.

In a rollout loop a lone small torch call costs several microseconds: its code has gone cold
since the previous call (the env, the policy and TensorDict bookkeeping ran in between).
:class:`Rows` allocates a block of 64 rows of zeros at once and cuts it into per-row tensors
with one ``unbind``; each row is handed out once, with the numpy array it shares its memory
with, and written (if at all) before it is handed out, never after. So each tensor is what
``torch.zeros`` gives, except that it shares its storage with the other rows of its block.

:func:`zeros` gives the reset zeros of ``RewardSum`` and ``StepCounter``; the numpy-row lane
(``_lane``) hands out the rows its plans write.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

_ROWS = 64
_function_modes = torch._C._len_torch_function_stack

# torch dtype -> the numpy dtype of rows holding it.
NUMPY_DTYPES = {
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.int64: np.dtype(np.int64),
}


def on_cpu(device: torch.device | None) -> bool:
    """Whether ``torch.zeros(..., device=device)`` allocates on the CPU. ``None`` is the
    default device: the CPU unless ``torch.set_default_device`` chose another, which acts
    through a torch function mode (with none active, the CPU, read without the cost of
    ``torch.get_default_device``)."""
    if device is None:
        return _function_modes() == 0 or torch.get_default_device().type == "cpu"
    return device.type == "cpu"


class Rows:
    """Fresh rows of one shape and numpy dtype: ``(tensor, numpy row)`` per :meth:`take`.

    Args:
        shape: the shape of one row.
        dtype: its numpy dtype.
        lane: a ``RowLane`` to register each row with as it is handed out, or ``None``.
    """

    __slots__ = ("dtype", "ids", "lane", "next", "pairs", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, lane: Any = None) -> None:
        self.shape, self.dtype, self.lane = shape, dtype, lane
        self.pairs: list[tuple[torch.Tensor, np.ndarray]] = []
        self.ids: list[int] = []  # id() of each row's tensor, for the lane's registry
        self.next = _ROWS  # the block is used up: the first take allocates one

    def take(self) -> tuple[torch.Tensor, np.ndarray]:
        """The next row, zeros, as a tensor and the numpy array sharing its memory."""
        i = self.next
        if i == _ROWS:
            block = np.zeros((_ROWS, *self.shape), dtype=self.dtype)
            self.pairs = list(zip(torch.from_numpy(block).unbind(0), block, strict=True))
            self.ids = [id(pair[0]) for pair in self.pairs]
            i = 0
        self.next = i + 1
        pair = self.pairs[i]
        if self.lane is not None:
            self.lane._current[self.ids[i]] = pair
        return pair


def zeros(
    owner: Any, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | None
) -> torch.Tensor:
    """``torch.zeros(shape, dtype=dtype, device=device)``; on the CPU, for the dtypes of
    :data:`NUMPY_DTYPES`, a row of :class:`Rows` kept in ``owner.__dict__``.
    """
    numpy_dtype = NUMPY_DTYPES.get(dtype)
    if numpy_dtype is None or not on_cpu(device):
        return torch.zeros(shape, dtype=dtype, device=device)
    pools = owner.__dict__.setdefault("_zero_rows", {})
    pool = pools.get((shape, numpy_dtype))
    if pool is None:
        pool = pools[(shape, numpy_dtype)] = Rows(shape, numpy_dtype)
    return pool.take()[0]


__all__ = ["NUMPY_DTYPES", "Rows", "on_cpu", "zeros"]
