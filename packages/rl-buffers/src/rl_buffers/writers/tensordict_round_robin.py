"""TensorDictRoundRobinWriter: a round-robin writer that records each item's index."""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_buffers.storages.list_storage import ListStorage
from rl_buffers.writers.round_robin import RoundRobinWriter
from rl_core._accel import td_access

__all__ = ["TensorDictRoundRobinWriter"]

INDEX_KEY = "index"


class TensorDictRoundRobinWriter(RoundRobinWriter):
    """A :class:`RoundRobinWriter` that tells each written TensorDict where its items went.

    After ``add``/``extend``, the TensorDict passed in holds each item's storage index
    under ``"index"`` (the caller's object is updated, so
    ``buffer.update_tensordict_priority(td)`` works right after ``buffer.extend(td)``).
    The storage keeps the items without that entry: a sampled batch gets its ``"index"``
    from the sampler, so storing it would only add a read per sample.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, TensorDictRoundRobinWriter
        >>> writer = TensorDictRoundRobinWriter()
        >>> writer.register_storage(LazyTensorStorage(4))
        >>> td = TensorDict({"obs": torch.zeros(3, 2)}, [3])
        >>> _ = writer.extend(td)
        >>> td["index"].tolist(), writer.storage.column("obs").shape
        ([0, 1, 2], torch.Size([3, 2]))
    """

    def add(self, data: Any) -> int:
        if not isinstance(data, TensorDictBase):
            return super().add(data)
        item = _without_index(data, self.storage)
        if item is data and isinstance(self.storage, ListStorage):
            item = data.copy()  # the list keeps the object; "index" goes on the caller's only
        row = super().add(item)
        index = _item_index(self.storage, data.unsqueeze(0), torch.tensor([row]))
        data.set(INDEX_KEY, _expand_right(index, data.unsqueeze(0).batch_size)[0])
        return row

    def extend(self, data: Any) -> Tensor:
        if not (type(data) is TensorDict or isinstance(data, TensorDictBase)):
            return super().extend(data)
        storage = self._storage if self._storage is not None else self.storage
        rows = super().extend(_without_index(data, storage))
        if storage.ndim == 1 and rows.shape[0] == data.batch_size[0] and data.batch_dims == 1:
            td_access.set_leaf(data, INDEX_KEY, rows)  # data.set, unchecked where rows fit
        elif rows.numel() == data.shape[0]:
            index = _item_index(self.storage, data, rows)
            data.set(INDEX_KEY, _expand_right(index, data.batch_size))
        else:  # a batch larger than the storage: only its last items were kept
            index = torch.full(data.shape[: getattr(self.storage, "ndim", 1)], -1)
            index[data.shape[0] - rows.numel() :] = _item_index(self.storage, data, rows)
            data.set(INDEX_KEY, _expand_right(index, data.batch_size))
        return rows

    def write_at(self, index: int | Tensor, data: Any, *, cursor: int | None = None) -> Tensor:
        """:meth:`RoundRobinWriter.write_at`, then ``"index"`` set on the caller's TensorDict."""
        if not isinstance(data, TensorDictBase):
            return super().write_at(index, data, cursor=cursor)
        single = isinstance(index, int) and not isinstance(index, bool)
        item = _without_index(data, self.storage)
        if item is data and single and isinstance(self.storage, ListStorage):
            item = data.copy()  # the list keeps the object; "index" goes on the caller's only
        rows = super().write_at(index, item, cursor=cursor)
        if single:
            data.set(INDEX_KEY, _expand_right(rows, data.unsqueeze(0).batch_size)[0])
        else:
            where = rows if data.device is None else rows.to(data.device)
            data.set(INDEX_KEY, _expand_right(where, data.batch_size))
        return rows


def _expand_right(index: Tensor, batch: torch.Size) -> Tensor:
    """``index`` (the storage's dims of the batch) broadcast over the items' own batch dims
    after them (``[B]`` to ``[B, T]`` for ``[B, T]`` items of a 1-D storage), as TorchRL's
    writer does."""
    extra = batch[index.dim() :]
    if not extra:
        return index
    return index.reshape(*index.shape, *([1] * len(extra))).expand(*index.shape, *extra)


def _without_index(data: TensorDictBase, storage: Any) -> TensorDictBase:
    # Tensor storages skip a top-level "index" once allocated; the batch that allocates
    # them (and every ListStorage item) must not hold it.
    if getattr(storage, "initialized", False) or INDEX_KEY not in data.keys():
        return data
    return data.exclude(INDEX_KEY)


def _item_index(storage: Any, data: TensorDictBase, rows: Tensor) -> Tensor:
    """Flat item numbers of rows ``rows``, shaped like the items' batch dims."""
    ndim = getattr(storage, "ndim", 1)
    inner = tuple(data.shape[1:ndim])
    if not inner:
        return rows
    width = math.prod(inner)
    return (rows.view(-1, *([1] * len(inner))) * width + torch.arange(width).view(inner)).long()
