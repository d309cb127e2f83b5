"""RoundRobinWriter: writes in order, overwriting the oldest items once full."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor
from torch.utils._pytree import tree_map

from rl_buffers.storages._pytree import is_tensor_tree, tree_batch_len, unsqueeze_tree
from rl_buffers.storages.tensor_storage import TensorStorage
from rl_buffers.writers.writer import Writer

__all__ = ["RoundRobinWriter"]

_function_modes = torch._C._len_torch_function_stack


def consecutive(start: int, stop: int) -> Tensor:
    """``torch.arange(start, stop)``: the int64 indices of rows written in order.

    With no torch function mode active (``torch.set_default_device`` acts through one),
    ``torch.arange`` gives a CPU tensor; numpy then builds the same values in about half
    the time of a lone torch factory call in a write loop (3 us of an ``extend`` of 256
    items in the rl-buffers benchmark). Elsewhere, ``torch.arange`` itself.

    Examples:
        >>> consecutive(3, 7).tolist(), consecutive(3, 7).dtype
        ([3, 4, 5, 6], torch.int64)
    """
    if _function_modes() == 0:
        return torch.from_numpy(np.arange(start, stop, dtype=np.int64))
    return torch.arange(start, stop)


def batch_len(data: Any) -> int:
    """Items in a batch: the first dim of a tensor, a TensorDict or a mapping of tensors
    (its first leaf's), ``len`` of a sequence."""
    if type(data) is TensorDict or isinstance(data, TensorDictBase):
        batch = data.batch_size
        if batch:
            return batch[0]
    if isinstance(data, Tensor | TensorDictBase):
        if not data.shape:
            raise ValueError(
                "extend: expected a batch with a leading batch dim, got a 0-dim "
                f"{type(data).__name__}. Use add() for one item or unsqueeze(0)."
            )
        return data.shape[0]
    if is_tensor_tree(data):
        return tree_batch_len(data)
    return len(data)


class RoundRobinWriter(Writer):
    """Writes rows in order and wraps around: once full, each write replaces the oldest.

    A batch larger than the storage keeps its last items (as if written one by one).

    Args:
        compilable: TorchRL's keyword; see :class:`Writer` (both values behave alike here).

    Examples:
        >>> import torch
        >>> from rl_buffers import LazyTensorStorage, RoundRobinWriter
        >>> writer = RoundRobinWriter()
        >>> writer.register_storage(LazyTensorStorage(4))
        >>> writer.extend(torch.zeros(3, 2)).tolist(), writer.extend(torch.ones(3, 2)).tolist()
        ([0, 1, 2], [3, 0, 1])
    """

    def __init__(self, compilable: bool = False) -> None:
        super().__init__(compilable)
        self._cursor = 0

    def add(self, data: Any) -> int:
        storage = self.storage
        rows = storage.rows_for(_one(data))
        index = self._cursor % rows
        storage.set(index, data)
        self._cursor = (index + 1) % rows
        return index

    def extend(self, data: Any) -> Tensor:
        storage = self._storage if self._storage is not None else self.storage
        n = batch_len(data)
        rows = storage.rows_for(data)
        start = self._cursor % rows
        if n > rows:
            start = (start + n - rows) % rows
            data = _tail(data, n - rows)
            n = rows
        if n == 0:
            return torch.empty(0, dtype=torch.long)
        index = consecutive(start, start + n)
        if start + n <= rows:
            storage.set(slice(start, start + n), data)
        else:
            index = index % rows
            storage.set(index, data)
        self._cursor = (start + n) % rows
        return index

    def write_at(self, index: int | Tensor, data: Any, *, cursor: int | None = None) -> Tensor:
        """Writes ``data`` at explicit rows without moving the cursor (TorchRL's
        ``write_at``; a buffer with a :class:`ConsumingSampler` fills consumed slots with it).

        Args:
            index: a row, or a 1-D tensor of rows (one per item of ``data``).
            data: the items.

        Keyword Args:
            cursor: where the cursor goes after the write (None: it stays). A tensor
                storage records it as its write position in the same write, so a storage
                reopened from disk goes on writing there.

        Returns:
            The rows written, a 1-D int64 tensor.
        """
        single = isinstance(index, int) and not isinstance(index, bool)
        rows = torch.as_tensor([index] if single else index, dtype=torch.long).reshape(-1)
        if single:
            data = _one(data)
        elif rows.numel() != batch_len(data):
            raise ValueError(
                f"{type(self).__name__}.write_at: expected one row per item, got "
                f"{rows.numel()} rows for {batch_len(data)} items."
            )
        storage = self.storage
        if isinstance(storage, TensorStorage):
            next_row = self._cursor if cursor is None else cursor
            storage.set(rows, data, set_cursor=False, next_row=next_row)
        else:
            storage.set(rows, data)
        if cursor is not None:
            self._cursor = cursor
        return rows

    def state_dict(self) -> dict[str, Any]:
        return {"cursor": self._cursor}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._cursor = int(state_dict["cursor"])

    def _empty(self) -> None:
        self._cursor = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cursor={self._cursor})"


def _one(data: Any) -> Any:
    if isinstance(data, Tensor | TensorDictBase):
        return data.unsqueeze(0)
    if is_tensor_tree(data):
        return unsqueeze_tree(data)
    return [data]


def _tail(data: Any, start: int) -> Any:
    """The items of batch ``data`` from ``start`` on (each leaf's, for a mapping)."""
    if is_tensor_tree(data):
        return tree_map(lambda leaf: leaf[start:], data)
    return data[start:]
