"""LazyTensorStorage: a tensor storage allocated from the first batch written."""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_buffers.storages import _memory
from rl_buffers.storages.tensor_storage import TensorStorage
from rl_core import ops

__all__ = ["LazyTensorStorage"]


class LazyTensorStorage(TensorStorage):
    """A :class:`TensorStorage` whose memory is allocated when the first batch arrives.

    The first batch fixes the keys, per-item shapes and dtypes; later batches must match
    them (a mismatch raises, naming the key and both shapes).

    On CPU, with ``ndim=1`` and a kernel package loaded (``rl-kernels``: batches are then
    read with one ``rl_core.ops.gather_rows`` call), the entries of one dtype are allocated
    side by side when they take a cache line or more per item: each item's
    ``observation``, ``action``… rows are neighbours in one ``[max_size, total]`` table, of
    which each entry is a column slice (a view, not contiguous), written with one
    ``torch.cat`` per batch. A sampled batch then reads a few adjacent cache lines per item
    instead of one or two per entry; what a read returns is unchanged (new contiguous
    tensors, the same values). Large CPU tensors are allocated on transparent huge pages
    where Linux grants them on request (fewer TLB misses at random rows).

    Args:
        max_size: the number of items the storage holds.

    Keyword Args:
        device: where the items live. Defaults to the first batch's device.
        ndim: how many leading batch dims of the written data index items. With ``ndim=2``
            and batches ``[n, T]``, the storage is ``[max_size // T, T]`` and writes whole
            rows. Defaults to 1.
        compilable: TorchRL's keyword; see :class:`Storage` (both values behave alike here).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage
        >>> storage = LazyTensorStorage(100)
        >>> storage.set(torch.arange(4), TensorDict({"obs": torch.zeros(4, 3)}, [4]))
        >>> len(storage), storage.get(torch.tensor([0, 3]))["obs"].shape
        (4, torch.Size([2, 3]))
    """

    def __init__(
        self,
        max_size: int,
        *,
        device: torch.device | str | None = None,
        ndim: int = 1,
        compilable: bool = False,
    ) -> None:
        super().__init__(None, max_size, device=device, ndim=ndim, compilable=compilable)

    def _allocate(self, template: Tensor | TensorDictBase, rows: int) -> Tensor | TensorDictBase:
        device = self.device if self.device is not None else template.device
        # (None is torch's default device, which zeros(device=None) allocates on)
        where = torch.device(device) if device is not None else torch.get_default_device()
        shape = (rows, *template.shape[1 : self.ndim])
        if isinstance(template, Tensor):
            return _zeros((*shape, *template.shape[self.ndim :]), template.dtype, where)
        # Packed where batches are read with one gather_rows op (a CPU storage, a kernel
        # package loaded): index_select per entry reads column slices slower than tensors.
        packed = self.ndim == 1 and where.type == "cpu" and bool(ops.load_kernel_packages())
        columns = _packed_columns(template, rows) if packed else {}
        return _zeros_like_items(template, shape, self.ndim, device, where, columns)


_PACK_MIN_BYTES = 64  # a cache line


def _zeros(shape: tuple[int, ...], dtype: torch.dtype, where: torch.device) -> Tensor:
    """``torch.zeros``; on the CPU, large ones on huge pages where granted (``_memory``)."""
    if where.type == "cpu":
        return _memory.zeros(shape, dtype)
    return torch.zeros(shape, dtype=dtype, device=where)


def _packed_columns(template: TensorDictBase, rows: int) -> dict[tuple[str, ...], Tensor]:
    """``{key: column}`` for the leaves of ``template``: the column slices of one
    ``[rows, total]`` zero table per dtype, in leaf order, shaped ``[rows, *item_shape]``,
    so that the entries of one item are adjacent in memory. Entries of no elements, and
    the entries of a dtype that takes less than ``_PACK_MIN_BYTES`` per item, are left out
    (they get their own zeros)."""
    leaves = [
        (key if isinstance(key, tuple) else (key,), value, math.prod(value.shape[1:]))
        for key, value in template.items(include_nested=True, leaves_only=True)
        if isinstance(value, Tensor)
    ]
    leaves = [leaf for leaf in leaves if leaf[2]]
    widths: dict[torch.dtype, int] = {}
    for _, value, width in leaves:
        widths[value.dtype] = widths.get(value.dtype, 0) + width
    # A dtype whose entries take less than a cache line per item (done and terminated
    # flags) stays in separate tensors: packing saves its reads little, and a copy per
    # entry writes a narrow table faster than a cat.
    widths = {
        dtype: width for dtype, width in widths.items() if width * dtype.itemsize >= _PACK_MIN_BYTES
    }
    tables = {dtype: _memory.zeros((rows, width), dtype) for dtype, width in widths.items()}
    columns, offsets = {}, dict.fromkeys(widths, 0)
    for key, value, width in leaves:
        if value.dtype not in tables:
            continue
        start = offsets[value.dtype]
        offsets[value.dtype] = start + width
        column = tables[value.dtype][:, start : start + width]
        columns[key] = column.view(rows, *value.shape[1:])
    return columns


def _zeros_like_items(
    template: TensorDictBase,
    shape: tuple[int, ...],
    ndim: int,
    device: torch.device | None,
    where: torch.device,
    columns: dict[tuple[str, ...], Tensor],
    prefix: tuple[str, ...] = (),
) -> TensorDict:
    # device: the TensorDict's; where: the leaves' (device, resolved).
    out = {}
    for key, value in template.items():
        path = (*prefix, key)
        if isinstance(value, TensorDictBase):
            out[key] = _zeros_like_items(value, shape, ndim, device, where, columns, path)
        elif isinstance(value, Tensor):
            column = columns.get(path)
            if column is None:
                column = _zeros((*shape, *value.shape[ndim:]), value.dtype, where)
            out[key] = column
        else:
            raise TypeError(
                f"LazyTensorStorage: expected tensor leaves, got {type(value).__name__} at key "
                f"{key!r}. Store non-tensor data in a ListStorage."
            )
    # The items' own batch dims after the storage's (``[B, T]`` items of a 1-D storage)
    # stay batch dims, as in TorchRL.
    return TensorDict(out, batch_size=(*shape, *template.batch_size[ndim:]), device=device)
