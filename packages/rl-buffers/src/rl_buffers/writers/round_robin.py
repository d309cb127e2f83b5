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
from rl_buffers.writers.writer import Writer, generation_rows

__all__ = ["RoundRobinWriter"]

_function_modes = torch._C._len_torch_function_stack
_EAGER_ROWS = 2**20  # stamps of a storage up to this many rows are allocated at once


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

    Keyword Args:
        track_generations: stamp every row with a generation that goes up by one at each
            write into it (the first write gives 0) and at each ``empty()`` (a written row
            only), so whoever holds an index from ``extend`` or ``sample`` can tell whether
            the row still holds what it read: :meth:`generations_of` gives the stamps, and
            a buffer's ``sample`` adds them to its info (and a TensorDict buffer to the
            batch) as ``"index_generation"``. The stamps live on the storage
            (``storage.slot_generations``): every buffer writing into it bumps them, a
            writer that does not track them too once they exist. Defaults to False.

    Raises:
        TypeError: ``track_generations`` is not a bool.

    Examples:
        >>> import torch
        >>> from rl_buffers import LazyTensorStorage, RoundRobinWriter
        >>> writer = RoundRobinWriter()
        >>> writer.register_storage(LazyTensorStorage(4))
        >>> writer.extend(torch.zeros(3, 2)).tolist(), writer.extend(torch.ones(3, 2)).tolist()
        ([0, 1, 2], [3, 0, 1])
        >>> tracking = RoundRobinWriter(track_generations=True)
        >>> tracking.register_storage(LazyTensorStorage(3))
        >>> rows = tracking.extend(torch.zeros(4))
        >>> tracking.generations_of(torch.arange(3)).tolist()
        [1, 0, 0]
    """

    def __init__(self, compilable: bool = False, *, track_generations: bool = False) -> None:
        super().__init__(compilable)
        if not isinstance(track_generations, bool):
            raise TypeError(
                f"{type(self).__name__}: expected track_generations to be a bool, got "
                f"{type(track_generations).__name__} ({track_generations!r})."
            )
        self._cursor = 0
        self._track_generations = track_generations
        # stamps loaded (load_state_dict, loads) before a storage is registered
        self._pending_generations: Tensor | None = None

    # ---------------------------------------------------------------- generations
    @property
    def tracks_generations(self) -> bool:
        return self._track_generations

    def register_storage(self, storage: Any) -> None:
        super().register_storage(storage)
        pending, self._pending_generations = self._pending_generations, None
        if pending is not None and storage.slot_generations is None:
            storage.slot_generations = pending  # a storage already stamped keeps its own

    @property
    def _generations(self) -> Tensor | None:
        if self._storage is None:
            return self._pending_generations
        return self._storage.slot_generations

    def _set_generations(self, value: Tensor | None) -> None:
        if self._storage is None:
            self._pending_generations = value
        else:
            self._storage.slot_generations = value

    def generations_of(self, index: Any) -> Tensor:
        """Each row's generation: how many times it was written (less one) or emptied since
        it was first written; ``-1`` for a row never written or outside the storage, and
        everywhere for a writer built without ``track_generations=True``.

        Args:
            index: rows (an int or a tensor); a multi-dim storage's index as a buffer
                returns it (a tuple, or ``[N, ndim]`` coordinates) by its rows.

        Returns:
            An int64 tensor shaped like the rows of ``index``, on its device.
        """
        stamps = self._generations
        if not self._track_generations or stamps is None:
            return super().generations_of(index)
        rows = generation_rows(index, self._storage)
        inside = (rows >= 0) & (rows < stamps.numel())
        read = stamps[rows.to(stamps.device).clamp(0, max(stamps.numel() - 1, 0))]
        return torch.where(inside, read.to(rows.device), torch.full_like(rows, -1))

    def _bump(self, rows: Tensor, capacity: int, times: Tensor | None = None) -> None:
        """Adds one (``times`` each, if given) to the stamps of ``rows``, growing the stamps
        to the storage's ``capacity`` rows; nothing if no one tracks generations."""
        stamps = self._storage.slot_generations
        if stamps is None and not self._track_generations:
            return
        if rows.numel() == 0:
            return
        needed = int(rows.max()) + 1
        if stamps is None or stamps.numel() < needed:
            # every row at once for a bounded storage; a huge one grows by doubling
            size = (
                capacity
                if capacity <= _EAGER_ROWS
                else min(capacity, max(needed, 2 * (0 if stamps is None else stamps.numel())))
            )
            grown = torch.full((size,), -1, dtype=torch.int64, device=rows.device)
            if stamps is not None:
                grown[: stamps.numel()] = stamps.to(rows.device)
            stamps = self._storage.slot_generations = grown
        step = torch.ones_like(rows) if times is None else times
        stamps.index_put_((rows.to(stamps.device),), step.to(stamps.device), accumulate=True)

    def add(self, data: Any) -> int:
        storage = self.storage
        rows = storage.rows_for(_one(data))
        index = self._cursor % rows
        storage.set(index, data)
        self._cursor = (index + 1) % rows
        if self._track_generations or storage.slot_generations is not None:
            self._bump(torch.tensor([index]), rows)
        return index

    def extend(self, data: Any) -> Tensor:
        storage = self._storage if self._storage is not None else self.storage
        n = batch_len(data)
        rows = storage.rows_for(data)
        start = self._cursor % rows
        if self._track_generations or storage.slot_generations is not None:
            # every row the batch passes over, as many times as it would be written one
            # item at a time (a batch longer than the storage writes some rows twice)
            passes = torch.full((rows,), n // rows, dtype=torch.long)
            passes[(start + torch.arange(n % rows)) % rows] += 1
            self._bump(torch.arange(rows)[passes > 0], rows, passes[passes > 0])
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
        if self._track_generations or storage.slot_generations is not None:
            self._bump(rows, storage.rows_for(_one(data) if single else data))
        return rows

    def state_dict(self) -> dict[str, Any]:
        state = {"cursor": self._cursor}
        stamps = self._generations
        if self._track_generations and stamps is not None:
            state["generations"] = stamps.clone()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._cursor = int(state_dict["cursor"])
        stamps = state_dict.get("generations")
        if stamps is not None:
            self._set_generations(torch.as_tensor(stamps, dtype=torch.int64).clone())

    def _empty(self) -> None:
        self._cursor = 0
        stamps = self._generations
        if stamps is not None:
            # a row written before holds nothing now: what was read from it is stale
            stamps.add_((stamps >= 0).long())

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
