"""The leaf plan of a tensor storage: fast batched reads and writes over a TensorDict tree.

A storage keeps its data as one TensorDict (or one tensor) whose leading dimensions are the
storage dimensions. Reading a batch walks a precomputed tree of ``(name, tensor)`` leaves and
builds the result with the public ``TensorDict`` constructor, one ``index_select`` per leaf,
instead of going through generic TensorDict indexing. With a kernel package loaded
(``rl-kernels``), a CPU storage reads the rows of all leaves in one
``rl_core.ops.gather_rows`` call instead (the same values, one pass). The result is the same
as ``storage[index]``: same keys, values, dtypes, devices and batch size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_core import ops
from rl_core._accel import td_access

NestedKey = str | tuple[str, ...]
INDEX_KEY = "index"
# The op's overload, resolved once: get_rows passes it a list of tensors and an int64 1-D
# index it has checked, so it skips the public wrapper's checks.
_GATHER_ROWS = torch.ops.rl_core.gather_rows.default


class LeafTree:
    """A read/write plan over a TensorDict (or a tensor) of stacked items.

    Args:
        data: the storage: a tensor or a TensorDict whose first ``ndim`` dims are the item
            dims.
        ndim: number of leading storage dimensions.
    """

    def __init__(self, data: Tensor | TensorDictBase, ndim: int) -> None:
        self.ndim = ndim
        self.is_tensor = isinstance(data, Tensor)
        self.shape = data.shape[:ndim]
        # A TensorDict's batch dims after the storage's (``[B, T]`` items of a 1-D storage
        # keep their ``T``): every read returns them, as TorchRL's storages do.
        self.item_batch = torch.Size(() if self.is_tensor else data.batch_size[ndim:])
        self.device = data.device
        if self.is_tensor:
            self.root: Any = _plain(data)
            self.leaves: list[tuple[NestedKey, Tensor]] = [((), self.root)]
        else:
            self.root = _build(data, ndim)
            self.leaves = list(_walk(self.root, ()))
            self._shapes = _shapes(self.root)
            self._plan = _Level(self.root)
            self._tables = self._plan.tables()
        self.leaf_shapes = {key: tuple(t.shape[ndim:]) for key, t in self.leaves}
        self.write_groups = _write_groups([t for _, t in self.leaves])
        if self.device is None and self.leaves:
            self.device = self.leaves[0][1].device
        self.on_cpu = all(t.device.type == "cpu" for _, t in self.leaves)
        # One gather_rows call for all leaves where a kernel package serves it (on the
        # reference kernel it is one index_select per leaf plus a dispatch: no gain).
        self.gather_in_one_op = (
            not self.is_tensor and self.on_cpu and bool(ops.load_kernel_packages())
        )
        # Written batches may carry the buffer's "index" entry on top of the stored keys
        # (the round-robin TensorDict writer sets it); it is not stored unless the storage
        # was allocated with it.
        self.loose_index = (INDEX_KEY,) not in self.leaf_shapes

    def values_of(self, data: Tensor | TensorDictBase) -> list[Tensor] | None:
        """The leaves of ``data`` in the order of :attr:`leaves`, or None if its keys or
        per-item shapes differ from the storage's (then :func:`check_match` says how)."""
        if self.is_tensor:
            if not isinstance(data, Tensor) or data.shape[1:] != self.root.shape[1:]:
                return None
            return [data]
        if not (type(data) is TensorDict or isinstance(data, TensorDictBase)):
            return None
        if self.ndim > 1 and data.batch_size[1 : self.ndim] != self.shape[1:]:
            return None
        out: list[Tensor] = []
        if not _collect(self._shapes, data, out, self.loose_index):
            return None
        return out

    def set_rows(self, index: slice, values: list[Tensor]) -> None:
        """Writes ``values`` (as :meth:`values_of` returns them) at rows ``index`` (a slice
        of the first dimension): one ``torch.cat`` into each table whose column slices are
        the leaves (see :func:`_write_groups`), one copy into each other leaf."""
        leaves = self.leaves
        for table, members in self.write_groups:
            if table is not None:
                target = table[index]
                rows, dtype = target.shape[0], target.dtype
                parts = []
                for i, width in members:
                    part = values[i]
                    # cat writes the bytes the copies below write where nothing needs a
                    # cast, a move, a broadcast or autograd.
                    if (
                        type(part) is not Tensor
                        or part.dtype is not dtype
                        or part.requires_grad
                        or not part.is_cpu
                        or part.shape[0] != rows
                    ):
                        break
                    if width != 0:
                        parts.append(part if width is None else part.reshape(rows, width))
                else:
                    torch.cat(parts, 1, out=target)
                    continue
            for i, _ in members:
                leaves[i][1][index] = values[i]  # copies across devices and dtypes as needed

    def get_rows(
        self, index: Tensor, extra: dict[str, Tensor] | None = None
    ) -> Tensor | TensorDictBase:
        """Items at a 1-D index into the first dimension (``ndim == 1``) or flat-unravelled.

        ``extra`` entries (TensorDict storages, ``ndim == 1``) are added to the result's
        root, in the same constructor call.
        """
        if self.ndim == 1:
            batch = index.shape  # a torch.Size
            if self.is_tensor:
                return self.root.index_select(0, index)
            if self.item_batch:
                batch = batch + self.item_batch
                if extra:
                    extra = {key: expand_items(value, batch) for key, value in extra.items()}
            if self.gather_in_one_op and index.dtype == torch.int64:
                rows = _GATHER_ROWS(self._tables, index)
                return self._plan.build(iter(rows), batch, extra)
            return self._plan.gather(index, batch, extra)
        multi = torch.unravel_index(index, self.shape)
        if self.is_tensor:
            return self.root[multi]
        return _gather_multi(self.root, multi, torch.Size(index.shape) + self.item_batch)


def expand_items(value: Tensor, batch: torch.Size) -> Tensor:
    """``value`` (one entry per item, ``[B, *rest]``) broadcast over the items' own batch
    dims: ``[*batch, *rest]`` (TorchRL's ``expand_as_right`` for ``"index"``)."""
    lead = value.shape[:1]
    if value.shape[: len(batch)] == batch:
        return value
    inner = batch[1:]
    view = value.reshape(*lead, *([1] * len(inner)), *value.shape[1:])
    return view.expand(*lead, *inner, *value.shape[1:])


def _write_groups(leaves: list[Tensor]) -> list[tuple[Tensor | None, list[tuple[int, int | None]]]]:
    """The leaves in write groups, in order: each run of two or more consecutive leaves that
    are, in order, the column slices of one ``[rows, width]`` CPU table (as
    ``LazyTensorStorage`` allocates the entries of a CPU storage; entries of no elements
    may sit between them) with that table, each other leaf alone with None. A leaf is
    listed as ``(position in leaves, width)``: the width its values are reshaped to for the
    table, None where they are ``[n, width]`` already, 0 for an entry of no elements."""
    groups: list[tuple[Tensor | None, list[tuple[int, int | None]]]] = []
    start = 0
    while start < len(leaves):
        table, end = _table_from(leaves, start)
        members = []
        for i in range(start, end):
            width = _item_numel(leaves[i])
            members.append((i, None if leaves[i].dim() == 2 and width else width))
        groups.append((table, members))
        start = end
    return groups


def _table_from(leaves: list[Tensor], start: int) -> tuple[Tensor | None, int]:
    """The table whose columns are ``leaves[start:end]`` and ``end``, or ``(None, start + 1)``."""
    first = leaves[start]
    if not (first.is_cpu and first.dim() >= 1 and first.stride(0) >= 1 and _item_numel(first)):
        return None, start + 1
    rows, width = first.shape[0], first.stride(0)
    storage, offset = first.untyped_storage().data_ptr(), first.storage_offset()
    used, end = 0, start
    while end < len(leaves) and used < width:
        leaf = leaves[end]
        if leaf.dim() >= 1 and leaf.shape[0] == rows and not _item_numel(leaf):
            end += 1  # an entry of no elements, anywhere: nothing to write
            continue
        if not (
            leaf.dtype == first.dtype
            and leaf.dim() >= 1
            and leaf.shape[0] == rows
            and leaf.stride(0) == width
            and leaf.untyped_storage().data_ptr() == storage
            and leaf.storage_offset() == offset + used
            and _items_are_blocks(leaf)
        ):
            break
        used += _item_numel(leaf)
        end += 1
    if used != width or end - start < 2:
        return None, start + 1
    return first.as_strided((rows, width), (width, 1), offset), end


def _item_numel(leaf: Tensor) -> int:
    return math.prod(leaf.shape[1:])


def _items_are_blocks(leaf: Tensor) -> bool:
    """Whether each item (row of dim 0) of ``leaf`` is laid out as a contiguous tensor."""
    expected = 1
    for size, stride in zip(reversed(leaf.shape[1:]), reversed(leaf.stride()[1:])):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _plain(tensor: Tensor) -> Tensor:
    # Memory-mapped tensors are Tensor subclasses; a plain view of the same memory skips
    # subclass dispatch on every read.
    if type(tensor) is Tensor:
        return tensor
    return tensor.as_subclass(Tensor)


def _build(td: TensorDictBase, ndim: int) -> list[tuple[str, Any]]:
    tree: list[tuple[str, Any]] = []
    for key, value in td.items():
        if isinstance(value, TensorDictBase):
            tree.append((key, _build(value, ndim)))
        elif isinstance(value, Tensor):
            tree.append((key, _plain(value)))
        else:
            raise TypeError(
                f"TensorStorage: expected tensor or TensorDict leaves, got {type(value).__name__} "
                f"at key {key!r}. Store non-tensor data in a ListStorage."
            )
    return tree


def _shapes(tree: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``tree`` with each leaf replaced by its shape after the first dim (what
    :func:`_collect` checks written values against)."""
    return [
        (key, _shapes(node) if isinstance(node, list) else node.shape[1:]) for key, node in tree
    ]


def _walk(tree: list[tuple[str, Any]], prefix: tuple[str, ...]):
    """``(key, leaf)`` pairs in tree order (the order :func:`_collect` fills)."""
    for key, node in tree:
        if isinstance(node, list):
            yield from _walk(node, (*prefix, key))
        else:
            yield (*prefix, key), node


def _collect(
    shapes: list[tuple[str, Any]],
    data: TensorDictBase,
    out: list[Tensor],
    loose_index: bool = False,
) -> bool:
    # shapes: the tree of per-leaf shapes after the first dim (see _shapes).
    # A plain TensorDict's entry dict is read in place (no copy); other types list theirs.
    entries = td_access.entries_view(data) if td_access.is_plain(data) else dict(data.items())
    skip_index = loose_index and INDEX_KEY in entries
    if len(entries) - skip_index != len(shapes):
        return False
    for key, shape in shapes:
        value = None if skip_index and key == INDEX_KEY else entries.get(key)
        # (exact type tests first: isinstance against tensordict's ABC costs more)
        if type(shape) is list:
            if not (type(value) is TensorDict or isinstance(value, TensorDictBase)) or not _collect(
                shape, value, out
            ):
                return False
        elif not (type(value) is Tensor or isinstance(value, Tensor)) or value.shape[1:] != shape:
            return False
        else:
            out.append(value)
    return True


class _Level:
    """One TensorDict level of the read plan: its tensor leaves and its sub-levels."""

    __slots__ = ("keys", "subs", "tensors")

    def __init__(self, tree: list[tuple[str, Any]]) -> None:
        self.keys = [key for key, node in tree if not isinstance(node, list)]
        self.tensors = [node for _, node in tree if not isinstance(node, list)]
        self.subs = [(key, _Level(node)) for key, node in tree if isinstance(node, list)]

    def tables(self) -> list[Tensor]:
        """The leaves of this level and its sub-levels, in the order :meth:`build` takes."""
        out = list(self.tensors)
        for _, sub in self.subs:
            out.extend(sub.tables())
        return out

    def build(self, rows, batch: torch.Size, extra: dict | None = None) -> TensorDict:
        """The batch from an iterator over the rows of :meth:`tables`, in that order."""
        out = {key: next(rows) for key in self.keys}
        for key, sub in self.subs:
            out[key] = sub.build(rows, batch)
        if extra:
            out.update(extra)
        # As in gather: every value has leading dims ``batch`` under a string key.
        return td_access.build_tensordict(out, batch)

    def gather(self, index: Tensor, batch: torch.Size, extra: dict | None = None) -> TensorDict:
        out = {key: tensor.index_select(0, index) for key, tensor in zip(self.keys, self.tensors)}
        for key, sub in self.subs:
            out[key] = sub.gather(index, batch)
        if extra:
            out.update(extra)
        # Every value is a tensor or TensorDict with leading dims ``batch`` (an index_select
        # along dim 0, a sub-level, or an extra entry checked by the caller) under a string
        # key: what the TensorDict constructor would check holds, so it is built unchecked.
        return td_access.build_tensordict(out, batch)


def _gather_multi(tree: list[tuple[str, Any]], multi: tuple[Tensor, ...], batch: torch.Size):
    out = {}
    for key, value in tree:
        if isinstance(value, list):
            out[key] = _gather_multi(value, multi, batch)
        else:
            out[key] = value[multi]
    return TensorDict(out, batch_size=batch, device=None)


def check_match(
    where: str,
    leaf_shapes: dict[NestedKey, tuple[int, ...]],
    data: Tensor | TensorDictBase,
    ndim: int,
    item_shape: Sequence[int],
) -> None:
    """Raises if ``data``'s keys or per-item shapes differ from the storage's.

    Args:
        where: caller name for the message.
        leaf_shapes: the storage's ``{key: per-item shape}``.
        data: the batch to write; its first ``ndim`` dims are item dims.
        ndim: storage dims in ``data`` (1 for one item less: see ``item_shape``).
        item_shape: the storage's item dims after the first (``ndim > 1``).
    """
    if isinstance(data, Tensor):
        expected = leaf_shapes[()]
        got = tuple(data.shape[ndim:])
        if got != expected:
            raise ValueError(
                f"{where}: expected items of shape {expected}, got {got} (batch "
                f"{tuple(data.shape)}). Reshape the data or start a new storage."
            )
        return
    data_shapes = {}
    for key, value in data.items(include_nested=True, leaves_only=True):
        key = key if isinstance(key, tuple) else (key,)
        if key == (INDEX_KEY,) and key not in leaf_shapes:
            continue
        data_shapes[key] = tuple(value.shape[ndim:])
    missing = [k for k in leaf_shapes if k not in data_shapes]
    extra = [k for k in data_shapes if k not in leaf_shapes]
    if missing or extra:
        raise KeyError(
            f"{where}: the data's keys differ from the storage's: missing {_names(missing)}, "
            f"unexpected {_names(extra)}. Write TensorDicts with the keys of the first batch "
            f"(select or exclude keys first)."
        )
    for key, expected in leaf_shapes.items():
        got = data_shapes[key]
        if got != expected:
            raise ValueError(
                f"{where}: key {_name(key)} has per-item shape {got} in the data but "
                f"{expected} in the storage. Reshape the data or start a new storage."
            )
    if ndim > 1 and tuple(data.batch_size[1:ndim]) != tuple(item_shape):
        raise ValueError(
            f"{where}: expected data with batch dims [*, {', '.join(map(str, item_shape))}] "
            f"(ndim={ndim}), got {tuple(data.batch_size)}."
        )


def check_dtypes(
    where: str, leaves: list[tuple[NestedKey, Tensor]], data: Tensor | TensorDictBase
) -> None:
    """Raises ValueError where an entry of the saved ``data`` has another dtype than the
    storage's leaf of the same key (a load would cast it silently)."""
    stored = dict(leaves)
    if isinstance(data, Tensor):
        saved: list[tuple[NestedKey, Tensor]] = [((), data)]
    else:
        saved = [
            (key if isinstance(key, tuple) else (key,), value)
            for key, value in data.items(include_nested=True, leaves_only=True)
        ]
    for key, value in saved:
        leaf = stored.get(key)
        if leaf is not None and value.dtype != leaf.dtype:
            what = f"key {_name(key)} is" if key else "the items are"
            raise ValueError(
                f"{where}: {what} {value.dtype} in the checkpoint but {leaf.dtype} in the "
                f"storage; loading would cast them. Load the checkpoint into a new storage, "
                f"or save data of the storage's dtypes."
            )


def _name(key: NestedKey) -> str:
    return repr(key[0]) if len(key) == 1 else repr(key)


def _names(keys: list[NestedKey]) -> str:
    return "[" + ", ".join(_name(k) for k in keys) + "]" if keys else "none"
