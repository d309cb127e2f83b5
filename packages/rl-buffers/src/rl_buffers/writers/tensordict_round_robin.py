"""TensorDictRoundRobinWriter: a round-robin writer that records each item's index."""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_buffers.writers.round_robin import RoundRobinWriter
from rl_core import tensordict_access

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
        row = super().add(_without_index(data, self.storage))
        data.set(INDEX_KEY, _item_index(self.storage, data.unsqueeze(0), torch.tensor([row]))[0])
        return row

    def extend(self, data: Any) -> Tensor:
        if not (type(data) is TensorDict or isinstance(data, TensorDictBase)):
            return super().extend(data)
        storage = self._storage if self._storage is not None else self.storage
        rows = super().extend(_without_index(data, storage))
        if storage.ndim == 1 and rows.shape[0] == data.batch_size[0]:
            tensordict_access.set_leaf(data, INDEX_KEY, rows)  # data.set, unchecked where rows fit
        elif rows.numel() == data.shape[0]:
            data.set(INDEX_KEY, _item_index(self.storage, data, rows))
        else:  # a batch larger than the storage: only its last items were kept
            index = torch.full(data.shape[: getattr(self.storage, "ndim", 1)], -1)
            index[data.shape[0] - rows.numel() :] = _item_index(self.storage, data, rows)
            data.set(INDEX_KEY, index)
        return rows


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
