"""TensorDictRoundRobinWriter: a round-robin writer that records each item's index."""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import Tensor

from rl_buffers.writers.round_robin import RoundRobinWriter

__all__ = ["TensorDictRoundRobinWriter"]

INDEX_KEY = "index"


class TensorDictRoundRobinWriter(RoundRobinWriter):
    """A :class:`RoundRobinWriter` that writes each item's storage index under ``"index"``.

    The ``"index"`` entry is set in the TensorDict passed to ``add``/``extend`` (the
    caller's object is updated, so ``buffer.update_tensordict_priority(td)`` works right
    after ``buffer.extend(td)``) and stored with the item.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, TensorDictRoundRobinWriter
        >>> writer = TensorDictRoundRobinWriter()
        >>> writer.register_storage(LazyTensorStorage(4))
        >>> td = TensorDict({"obs": torch.zeros(3, 2)}, [3])
        >>> _ = writer.extend(td)
        >>> td["index"].tolist()
        [0, 1, 2]
    """

    def add(self, data: Any) -> int:
        if isinstance(data, TensorDictBase):
            rows = self.storage.rows_for(data.unsqueeze(0))
            row = self._cursor % rows
            data.set(
                INDEX_KEY, _item_index(self.storage, data.unsqueeze(0), torch.tensor([row]))[0]
            )
        return super().add(data)

    def extend(self, data: Any) -> Tensor:
        if isinstance(data, TensorDictBase):
            n = data.shape[0] if data.shape else 0
            rows = self.storage.rows_for(data)
            start = self._cursor % rows
            planned = torch.arange(start, start + n) % rows
            data.set(INDEX_KEY, _item_index(self.storage, data, planned))
        return super().extend(data)


def _item_index(storage: Any, data: TensorDictBase, rows: Tensor) -> Tensor:
    """Flat item numbers of rows ``rows``, shaped like the items' batch dims."""
    ndim = getattr(storage, "ndim", 1)
    inner = tuple(data.shape[1:ndim])
    if not inner:
        return rows
    width = math.prod(inner)
    return (rows.view(-1, *([1] * len(inner))) * width + torch.arange(width).view(inner)).long()
