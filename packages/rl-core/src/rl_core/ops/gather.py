"""Rows of several tables at one index, in one op: the read of a replay buffer's batch.

A replay buffer stores each entry of its items as one table (a tensor whose first dim is
the item) and reads a batch as the same rows of every table. One ``index_select`` per table
pays one call per entry and reads the rows of one table after the other; this op reads all
of them in one call, so an installed kernel package (``rl-kernels``) can fetch the rows of
every table together, their cache misses overlapping. The values are exactly what
``index_select`` gives.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from rl_core.ops import _library  # noqa: F401  (registers the ops)
from rl_core.ops.kernel_packages import ensure_kernel_packages

__all__ = ["gather_rows"]


def gather_rows(tables: Sequence[Tensor], index: Tensor) -> list[Tensor]:
    """Rows ``index`` of every table: ``[t.index_select(0, index) for t in tables]``, one op.

    Runs ``torch.ops.rl_core.gather_rows``; with ``rl-kernels`` installed, its CPU kernel
    reads the rows of all tables in one pass (prefetching rows ahead) and falls back to
    ``index_select`` for a table that is not contiguous. Not differentiable (the rows of a
    replay buffer's storage need no gradient).

    Args:
        tables: tensors with at least one dim, on ``index``'s device; any dtypes and sizes
            of dim 0.
        index: ``[K]`` row numbers (int64, or another integer dtype, converted), each in
            ``[0, t.shape[0])`` for every table ``t``.

    Returns:
        a list with one new contiguous tensor ``[K, *t.shape[1:]]`` per table, in order.

    Raises:
        TypeError: ``tables`` holds something else than tensors, or ``index`` is not an
            integer tensor.
        ValueError: ``index`` is not 1-D, or a table has no dim or is on another device.
        IndexError: a row number is outside a table.

    Examples:
        >>> import torch
        >>> from rl_core.ops import gather_rows
        >>> obs, done = torch.arange(12.0).reshape(6, 2), torch.zeros(6, 1, dtype=torch.bool)
        >>> rows = gather_rows([obs, done], torch.tensor([4, 0, 4]))
        >>> rows[0].tolist(), rows[1].shape
        ([[8.0, 9.0], [0.0, 1.0], [8.0, 9.0]], torch.Size([3, 1]))
    """
    where = "gather_rows"
    if not isinstance(index, Tensor) or index.is_floating_point() or index.is_complex():
        got = index.dtype if isinstance(index, Tensor) else type(index).__name__
        raise TypeError(f"{where}: expected index to be an integer tensor, got {got}.")
    if index.dim() != 1:
        raise ValueError(
            f"{where}: expected index to be 1-D, got shape {tuple(index.shape)}. Flatten it "
            f"and reshape the rows."
        )
    tables = list(tables)
    for number, table in enumerate(tables):
        if not isinstance(table, Tensor):
            raise TypeError(
                f"{where}: expected tables[{number}] to be a tensor, got {type(table).__name__}."
            )
        if table.dim() < 1 or table.device != index.device:
            raise ValueError(
                f"{where}: expected tables[{number}] with at least 1 dim on {index.device} "
                f"like index, got shape {tuple(table.shape)} on {table.device}."
            )
    if index.dtype != torch.int64:
        index = index.long()
    ensure_kernel_packages()
    return torch.ops.rl_core.gather_rows(tables, index)
