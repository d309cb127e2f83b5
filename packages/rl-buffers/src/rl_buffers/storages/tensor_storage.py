"""TensorStorage: items stacked in a tensor or a TensorDict."""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_buffers.storages._pytree import flatten_items, is_tree, unflatten_items
from rl_buffers.storages._tree import LeafTree, check_dtypes, check_match
from rl_buffers.storages.storage import Storage

__all__ = ["TensorStorage"]


class TensorStorage(Storage):
    """Keeps items stacked along the first ``ndim`` dims of a tensor or a TensorDict.

    Built on existing data, the storage counts every slot as filled (``len == max_size``):
    ``TensorStorage(TensorDict.load_memmap(path))`` serves a directory of memory-mapped data.
    Reads of a batch of items run one ``index_select`` per leaf.

    Items may also be given as a mapping of tensors (``{"a": t, "b": {"c": [t0, t1]}}``,
    TorchRL's "pytree" data): the storage keeps its tensor leaves and returns what it reads
    in the same structure. Every later write must have that structure. Such a storage has
    no ``state_dict`` (as TorchRL's).

    Args:
        storage: the data, a tensor, a TensorDict or a mapping of tensors with batch dims
            ``[rows, *inner]``.
        max_size: the number of items; defaults to (and must equal) what ``storage`` holds.

    Keyword Args:
        device: where the items live; ``storage`` is moved there. Defaults to its device.
        ndim: how many leading dims index items (``2`` for ``[rows, time]`` data written
            row by row). Defaults to 1.
        compilable: TorchRL's keyword; see :class:`Storage` (both values behave alike here).

    Raises:
        ValueError: ``ndim`` is not a positive int, or ``max_size`` disagrees with ``storage``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import TensorStorage
        >>> storage = TensorStorage(TensorDict({"obs": torch.arange(6.0).view(3, 2)}, [3]))
        >>> len(storage), storage.get(torch.tensor([2, 0]))["obs"].tolist()
        (3, [[4.0, 5.0], [0.0, 1.0]])
    """

    def __init__(
        self,
        storage: Tensor | TensorDictBase | None,
        max_size: int | None = None,
        *,
        device: torch.device | str | None = None,
        ndim: int = 1,
        compilable: bool = False,
    ) -> None:
        name = type(self).__name__
        if isinstance(ndim, bool) or not isinstance(ndim, int) or ndim < 1:
            raise ValueError(f"{name}: expected ndim to be an int >= 1, got {ndim!r}.")
        self.ndim = ndim
        self.device = torch.device(device) if device is not None else None
        self._data: Tensor | TensorDictBase | None = None
        self._tree: LeafTree | None = None
        self._len_rows = 0
        self._rows = 0
        self._next_row = 0
        self._persistent = type(self)._written is not TensorStorage._written
        self._treespec: Any = None  # the structure of mapping items (None: tensors, TDs)
        if storage is None:
            if max_size is None:
                raise ValueError(f"{name}: expected storage or max_size, got neither.")
            super().__init__(max_size, compilable=compilable)
            return
        if is_tree(storage):
            storage, self._treespec = flatten_items(name, storage, ndim)
        if not isinstance(storage, Tensor | TensorDictBase):
            raise TypeError(
                f"{name}: expected storage to be a tensor or a TensorDict, got "
                f"{type(storage).__name__}. Use ListStorage for other objects."
            )
        if len(storage.shape) < ndim:
            raise ValueError(
                f"{name}: expected storage with at least {ndim} batch dims (ndim={ndim}), got "
                f"shape {tuple(storage.shape)}."
            )
        held = math.prod(storage.shape[:ndim])
        if max_size is not None and max_size != held:
            raise ValueError(
                f"{name}: max_size={max_size} but the storage holds {held} items "
                f"(shape {tuple(storage.shape[:ndim])}). Omit max_size."
            )
        super().__init__(held, compilable=compilable)
        if self.device is not None and storage.device != self.device:
            storage = storage.to(self.device)
        self._adopt(storage, len_rows=storage.shape[0])

    # ---------------------------------------------------------------- allocation
    @property
    def initialized(self) -> bool:
        """Whether the storage's memory exists (lazy storages allocate on first write)."""
        return self._data is not None

    def _adopt(self, data: Tensor | TensorDictBase, *, len_rows: int) -> None:
        self._data = data
        self._rows = data.shape[0]
        self._tree = LeafTree(data, self.ndim)
        self._len_rows = len_rows
        if self.device is None:
            self.device = data.device

    def _allocate(self, template: Tensor | TensorDictBase, rows: int) -> Tensor | TensorDictBase:
        raise RuntimeError(
            f"{type(self).__name__}: the storage holds no data; build it on a tensor or a "
            f"TensorDict, or use LazyTensorStorage."
        )

    def rows_for(self, data: Any) -> int:
        if self._data is not None:
            return self._rows
        if is_tree(data):
            data = flatten_items(f"{type(self).__name__}.set", data, self.ndim)[0]
        _check_tensor_batch(type(self).__name__, data)
        inner = math.prod(_batch_shape(data)[1 : self.ndim])
        rows = self.max_size // max(inner, 1)
        if rows < 1:
            raise ValueError(
                f"{type(self).__name__}: max_size={self.max_size} holds no row of "
                f"{inner} items (batch {tuple(_batch_shape(data))}, ndim={self.ndim}). "
                f"Raise max_size."
            )
        return rows

    @property
    def num_rows(self) -> int:
        return self._len_rows

    @property
    def next_row(self) -> int:
        """The row after the last one written (where a round-robin writer goes on)."""
        return self._next_row

    # ---------------------------------------------------------------- read and write
    def __len__(self) -> int:
        if self._tree is None:
            return 0
        if self.ndim == 1:
            return self._len_rows
        return self._len_rows * math.prod(self._tree.shape[1:])

    def set(
        self,
        index: int | slice | Tensor,
        data: Tensor | TensorDictBase,
        *,
        set_cursor: bool = True,
        next_row: int | None = None,
    ) -> None:
        """Writes ``data`` at rows ``index``.

        Args:
            index: an int, a slice, a range, or a 1-D tensor or list of rows.
            data: the items, one per row: a tensor, a TensorDict or a mapping of tensors.

        Keyword Args:
            set_cursor: whether :attr:`next_row` moves to the row after the last one
                written (TorchRL's keyword). False keeps it: writes into scattered free
                slots (:meth:`RoundRobinWriter.write_at`) leave the writer's position alone.
            next_row: with ``set_cursor=False``, the write position to record instead
                (stored with the length, after the data, in persistent storages).
        """
        if type(index) is range or type(index) is list:
            index = torch.as_tensor(index, dtype=torch.long)
        if self._treespec is not None or (
            type(data) is not TensorDict and not isinstance(data, Tensor) and is_tree(data)
        ):
            data = self._flatten(data, isinstance(index, int))
        tree = self._tree
        if next_row is not None and (isinstance(next_row, bool) or not isinstance(next_row, int)):
            raise TypeError(
                f"{type(self).__name__}.set: expected next_row to be an int or None, got "
                f"{type(next_row).__name__}."
            )
        if not set_cursor:
            self._set(index, data, next_row=self._next_row if next_row is None else next_row)
            return
        if tree is not None and type(index) is slice:
            # The common case (a batch written at consecutive rows of an allocated storage):
            # the leaves are collected and checked once, then copied.
            values = tree.values_of(data)
            if values is not None:
                stop = index.indices(self._rows)[1]
                if self._persistent:
                    self._writing(index)
                tree.set_rows(index, values)
                self._next_row = stop % self._rows
                self._len_rows = max(self._len_rows, stop)  # (no branch: traces in compile)
                if self._persistent:
                    self._written(stop)
                return
        self._set(index, data)

    def _set(
        self,
        index: int | slice | Tensor,
        data: Tensor | TensorDictBase,
        *,
        next_row: int | None = None,
    ) -> None:
        # next_row: the write position to record (None: the row after the last written)
        where = f"{type(self).__name__}.set"
        _check_tensor_batch(where, data)
        single = isinstance(index, int)
        if single:
            data = data.unsqueeze(0)
            index = slice(index, index + 1)
        if self._data is None:
            if len(data.shape) < self.ndim:
                raise ValueError(
                    f"{where}: expected data with at least {self.ndim} batch dims "
                    f"(ndim={self.ndim}), got shape {tuple(data.shape)}."
                )
            self._adopt(self._allocate(data, self.rows_for(data)), len_rows=0)
        tree = self._tree
        values = tree.values_of(data)
        if values is None:
            check_match(where, tree.leaf_shapes, data, self.ndim, tree.shape[1:])
            raise ValueError(
                f"{where}: the data does not match the storage's layout "
                f"({tree.leaf_shapes}); got {data}."
            )
        if type(index) is slice:
            stop = index.indices(self._rows)[1]
            self._next_row = stop % self._rows
            if self._persistent:
                self._writing(index)
            tree.set_rows(index, values)
        else:
            index = index.to(tree.device)
            if self._persistent:
                self._writing(index)
            stop = int(index.max()) + 1 if index.numel() else 0
            if index.numel():
                self._next_row = (int(index[-1]) + 1) % self._rows
            for (_, leaf), value in zip(tree.leaves, values):
                leaf.index_copy_(0, index, value.to(leaf.device, leaf.dtype, non_blocking=True))
        if next_row is not None:
            self._next_row = next_row % self._rows
        self._len_rows = max(self._len_rows, stop)
        if self._persistent:
            self._written(stop)

    def _flatten(self, data: Any, single: bool) -> TensorDictBase:
        """A mapping batch as the TensorDict of its leaves (its structure checked against
        the stored items')."""
        where = f"{type(self).__name__}.set"
        if not is_tree(data):
            raise TypeError(
                f"{where}: the storage holds mapping items (TorchRL's pytree data); expected "
                f"a mapping of the same structure, got {type(data).__name__}."
            )
        if self._tree is not None and self._treespec is None:
            raise TypeError(
                f"{where}: the storage holds {'tensors' if self._tree.is_tensor else 'TensorDicts'}"
                f"; expected the same, got a mapping. Use a new storage for mapping items."
            )
        flat, spec = flatten_items(where, data, 0 if single else self.ndim)
        if self._treespec is None:
            self._treespec = spec
        elif spec != self._treespec:
            raise ValueError(
                f"{where}: expected items of the stored structure {self._treespec}, got {spec}."
            )
        return flat

    def _writing(self, index: slice | Tensor) -> None:
        """Hook run before each write at rows ``index`` (persistent storages save the rows it
        overwrites here); only called where :meth:`_written` is overridden."""

    def _written(self, stop: int) -> None:
        """Hook run after each write (persistent storages record their length here)."""

    def get(
        self, index: int | Tensor, *, extra: dict[str, Tensor] | None = None
    ) -> Tensor | TensorDictBase:
        """Reads items; ``extra`` (string keys, 1-D index, TensorDict items) is added to the
        result's root entries."""
        tree = self._tree
        if tree is None:
            raise RuntimeError(
                f"{type(self).__name__}.get: the storage is empty; write items before reading."
            )
        if type(index) is range or type(index) is list:
            index = torch.as_tensor(index, dtype=torch.long)
        if self._treespec is None:
            return self._get(tree, index, extra)
        if extra is not None:
            raise ValueError(
                f"{type(self).__name__}.get: extra entries need TensorDict items; this "
                f"storage holds mapping items."
            )
        return unflatten_items(self._get(tree, index, None), self._treespec)

    def _get(
        self, tree: LeafTree, index: int | Tensor, extra: dict[str, Tensor] | None
    ) -> Tensor | TensorDictBase:
        if isinstance(index, int):
            return self._data[self.unravel(torch.tensor(index))]
        if index.dim() != 1:
            out = tree.get_rows(index.reshape(-1))
            return out.reshape(*index.shape, *out.shape[1:])
        if extra is not None:
            if tree.is_tensor or self.ndim != 1:
                raise ValueError(
                    f"{type(self).__name__}.get: extra entries need TensorDict items and ndim=1."
                )
            for key, value in extra.items():
                if type(key) is not str or not (
                    isinstance(value, Tensor) and value.shape[:1] == index.shape
                ):
                    raise ValueError(
                        f"{type(self).__name__}.get: expected each extra entry to be a tensor "
                        f"of shape [{index.shape[0]}, ...] under a string key, got {key!r}: "
                        f"{type(value).__name__} of shape {tuple(getattr(value, 'shape', ()))}."
                    )
        if not tree.on_cpu:
            index = index.to(tree.device)
        return tree.get_rows(index, extra)

    def column(self, key: str | tuple[str, ...]) -> Tensor:
        """Entry ``key`` of the stored items, in storage order (``ndim == 1`` storages).

        Raises:
            KeyError: the items have no such entry.
        """
        tree = self._tree
        if tree is None:
            raise RuntimeError(f"{type(self).__name__}.column: the storage is empty.")
        if tree.is_tensor:
            raise KeyError(
                f"{type(self).__name__}.column: the storage holds plain tensors, not TensorDicts; "
                f"there is no entry {key!r}."
            )
        path = key if isinstance(key, tuple) else (key,)
        for leaf_key, leaf in tree.leaves:
            if leaf_key == path:
                return leaf[: self._len_rows]
        raise KeyError(
            f"{type(self).__name__}.column: the items have no entry {key!r}; entries: "
            f"{[k if len(k) > 1 else k[0] for k, _ in tree.leaves]}."
        )

    def unravel(self, flat: Tensor) -> Tensor | tuple[Tensor, ...]:
        if self.ndim == 1 or self._tree is None:
            return flat
        return torch.unravel_index(flat, self._tree.shape)

    def ravel(self, index: Any) -> Tensor:
        """Flat item numbers of ``index``: a tuple of per-dim tensors (as :meth:`unravel`
        returns for ``ndim > 1``) is raveled, a tensor is taken as flat item numbers."""
        if type(index) is Tensor and index.dtype == torch.long and index.dim() == 1:
            return index  # flat item numbers already (a sampled batch's "index")
        if not isinstance(index, tuple) or self._tree is None:
            return torch.as_tensor(index, dtype=torch.long).reshape(-1)
        shape = self._tree.shape
        flat = torch.zeros_like(torch.as_tensor(index[0]), dtype=torch.long)
        for dim, part in enumerate(index):
            flat = flat * shape[dim] + torch.as_tensor(part, dtype=torch.long)
        return flat.reshape(-1)

    # ---------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        if self._treespec is not None:
            raise TypeError(
                f"{type(self).__name__}.state_dict: mapping items (TorchRL's pytree data) are "
                f"not supported by state_dict, as in TorchRL; store TensorDicts to save the "
                f"storage."
            )
        return {
            "data": self._data,
            "len_rows": self._len_rows,
            "next_row": self._next_row,
            "max_size": self.max_size,
            "ndim": self.ndim,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`'s output.

        Raises:
            ValueError: the saved storage has another size, layout or dtypes than this one
                (checked before anything changes).
        """
        self._check_state(f"{type(self).__name__}.load_state_dict", state_dict)
        data = state_dict["data"]
        if data is None:
            self._data, self._tree, self._len_rows = None, None, 0
            return
        if self.device is not None:
            data = data.to(self.device)
        if self._data is None:
            self._adopt(self._allocate(data, data.shape[0]), len_rows=0)
        self._copy_in(data)
        self._len_rows = state_dict["len_rows"]
        self._next_row = state_dict.get("next_row", self._len_rows % self._rows)

    def _check_state(self, where: str, state: Any) -> None:
        if not isinstance(state, dict) or "data" not in state:
            raise ValueError(
                f"{where}: expected a state dict with a 'data' entry (as state_dict() "
                f"returns), got {type(state).__name__}. Nothing was restored."
            )
        data = state["data"]
        if data is None:
            return
        if not isinstance(data, Tensor | TensorDictBase):
            raise ValueError(
                f"{where}: expected the saved 'data' to be a tensor or a TensorDict, got "
                f"{type(data).__name__}. Nothing was restored."
            )
        ndim = state.get("ndim", self.ndim)
        if ndim != self.ndim or len(data.shape) < ndim:
            raise ValueError(
                f"{where}: the checkpoint holds a storage of ndim={ndim} (batch "
                f"{tuple(data.shape)}), this one has ndim={self.ndim}. Nothing was restored."
            )
        rows = self._rows if self._data is not None else self.rows_for(data)
        if data.shape[0] != rows:
            saved = state.get("max_size", math.prod(data.shape[:ndim]))
            raise ValueError(
                f"{where}: the checkpoint holds a storage of max_size={saved} ({data.shape[0]} "
                f"rows), this one has max_size={self.max_size} ({rows} rows). Nothing was "
                f"restored; load it into a storage of max_size={saved}."
            )
        if self._data is not None:
            try:
                self._check_saved(data, where)
            except (TypeError, ValueError, KeyError) as error:
                raise ValueError(f"{error.args[0]} Nothing was restored.") from error

    def _check_restorable(self, where: str, data: Tensor | TensorDictBase, rows: int) -> None:
        """Raises ValueError unless checkpointed rows ``data`` (of a storage of ``rows``
        rows) fit this storage; changes nothing."""
        if self._data is None:
            return
        if rows != self._rows:
            raise ValueError(
                f"{where}: the checkpoint holds a storage of {rows} rows, this one has "
                f"{self._rows}. Nothing was restored."
            )
        try:
            check_match(where, self._tree.leaf_shapes, data, self.ndim, self._tree.shape[1:])
            check_dtypes(where, self._tree.leaves, data)
        except (TypeError, ValueError, KeyError) as error:
            raise ValueError(f"{error} Nothing was restored.") from error

    def _restore(
        self, data: Tensor | TensorDictBase, len_rows: int, next_row: int, rows: int
    ) -> None:
        """Writes checkpointed rows ``[0, len_rows)`` back (see the checkpointers)."""
        if self._data is None:
            self._adopt(self._allocate(data, rows), len_rows=0)
        self._data[:len_rows] = data.to(self._data.device)
        self._len_rows = len_rows
        self._next_row = next_row

    def _copy_in(self, data: Tensor | TensorDictBase) -> None:
        self._check_saved(data)
        self._data.copy_(data) if isinstance(data, Tensor) else self._data.update_(data)

    def _check_saved(self, data: Tensor | TensorDictBase, where: str | None = None) -> None:
        """Raises unless ``data`` has this (allocated) storage's shape, layout and dtypes."""
        where = where or f"{type(self).__name__}.load_state_dict"
        if self._data.shape[: self.ndim] != data.shape[: self.ndim]:
            raise ValueError(
                f"{where}: the saved storage has shape {tuple(data.shape[: self.ndim])}, this "
                f"one {tuple(self._data.shape[: self.ndim])}."
            )
        check_match(where, self._tree.leaf_shapes, data, self.ndim, self._tree.shape[1:])
        check_dtypes(where, self._tree.leaves, data)

    def _empty(self) -> None:
        self._len_rows = 0
        self._next_row = 0
        if self._data is not None:
            self._written(0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_size={self.max_size}, len={len(self)}, ndim={self.ndim})"


def _check_tensor_batch(where: str, data: Any) -> None:
    """Raises unless ``data`` is a tensor or a TensorDict; a tuple or list of tensors (one
    batch per entry, ``(obs, action)``) is named with its batch sizes."""
    if isinstance(data, Tensor | TensorDictBase):
        return
    if isinstance(data, tuple | list) and data and all(isinstance(x, Tensor) for x in data):
        sizes = [x.shape[0] if x.dim() else None for x in data]
        if len(set(sizes)) > 1:
            raise ValueError(
                f"{where}: the batch is a {type(data).__name__} of {len(data)} tensors whose "
                f"batch sizes (first dims) differ: {sizes} (shapes "
                f"{[tuple(x.shape) for x in data]}). Every entry of a batch needs the same "
                f"number of items."
            )
        raise TypeError(
            f"{where}: expected a tensor or a TensorDict, got a {type(data).__name__} of "
            f"{len(data)} tensors (batch size {sizes[0]}). Put them in one TensorDict, e.g. "
            f"TensorDict({{'observation': obs, 'action': action}}, [{sizes[0]}]), or use "
            f"ListStorage."
        )
    raise TypeError(
        f"{where}: expected a tensor or a TensorDict, got {type(data).__name__}. "
        f"Use ListStorage for other objects."
    )


def _batch_shape(data: Any) -> torch.Size:
    return data.batch_size if isinstance(data, TensorDictBase) else data.shape
