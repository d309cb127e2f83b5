"""TensorDictMaxValueWriter: keeps the items with the highest rank."""

from __future__ import annotations

import heapq
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import Tensor

from rl_buffers.writers.round_robin import batch_len
from rl_buffers.writers.writer import Writer

__all__ = ["TensorDictMaxValueWriter"]

_REDUCTIONS = {
    "sum": lambda t: t.sum(-1),
    "mean": lambda t: t.mean(-1),
    "max": lambda t: t.amax(-1),
    "min": lambda t: t.amin(-1),
}


class TensorDictMaxValueWriter(Writer):
    """Keeps the ``max_size`` items with the highest ``rank_key`` value.

    While the storage has room every item is written; once full, an item replaces the
    lowest-ranked stored item if it ranks higher, and is dropped otherwise. The rank of an
    item is its ``rank_key`` entry reduced over its feature dims (``reduction``).

    Args:
        rank_key: the entry that ranks items. Defaults to ``("next", "reward")``.
        reduction: ``"sum"``, ``"mean"``, ``"max"`` or ``"min"`` over the feature dims.

    Keyword Args:
        compilable: TorchRL's keyword; see :class:`Writer` (both values behave alike here).

    Raises:
        ValueError: ``reduction`` is unknown.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, TensorDictMaxValueWriter
        >>> storage = LazyTensorStorage(2)
        >>> writer = TensorDictMaxValueWriter(rank_key="score")
        >>> writer.register_storage(storage)
        >>> _ = writer.extend(TensorDict({"score": torch.tensor([1.0, 5.0, 3.0])}, [3]))
        >>> sorted(storage.get(torch.arange(2))["score"].tolist())
        [3.0, 5.0]
    """

    def __init__(
        self, rank_key: Any = None, reduction: str = "sum", *, compilable: bool = False
    ) -> None:
        super().__init__(compilable)
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"TensorDictMaxValueWriter: expected reduction in {sorted(_REDUCTIONS)}, got "
                f"{reduction!r}."
            )
        self.rank_key = rank_key if rank_key is not None else ("next", "reward")
        self.reduction = reduction
        self._heap: list[tuple[float, int]] = []  # (rank, row), lowest rank first
        self._filled = 0
        # the row the next item goes to while the storage fills (0 again once full), as
        # TorchRL's writers' cursor
        self._cursor = 0

    def register_storage(self, storage: Any) -> None:
        """Attaches the storage to write into.

        Raises:
            ValueError: the storage indexes items with more than one dim (``ndim > 1``):
                items are ranked one by one, a row of several items has no one rank.
        """
        ndim = getattr(storage, "ndim", 1)
        if ndim > 1:
            raise ValueError(
                f"TensorDictMaxValueWriter is not compatible with storages with more than one "
                f"dimension: got {type(storage).__name__} with ndim={ndim}. Use a storage "
                f"with ndim=1 (flatten the batch first) or RoundRobinWriter."
            )
        super().register_storage(storage)

    def _ranks(self, data: TensorDictBase) -> Tensor:
        _check_tensordict(data)
        value = data.get(self.rank_key, None)
        if value is None:
            raise KeyError(
                f"TensorDictMaxValueWriter: the data has no rank_key {self.rank_key!r}; keys: "
                f"{list(data.keys(True, True))}. Pass rank_key= naming the ranking entry."
            )
        value = value.reshape(value.shape[0], -1).float()
        return _REDUCTIONS[self.reduction](value)

    def add(self, data: Any) -> int:
        _check_tensordict(data)
        rows = self.extend(data.unsqueeze(0))
        return int(rows[0]) if rows.numel() else -1

    def extend(self, data: Any) -> Tensor:
        ranks = self._ranks(data).tolist()
        capacity = self.storage.rows_for(data)
        if batch_len(data) == 0:
            return torch.empty(0, dtype=torch.long)
        chosen: dict[int, int] = {}  # row -> position in data (the last one wins)
        for position, rank in enumerate(ranks):
            if self._filled < capacity:
                row = self._filled
                self._filled += 1
                self._cursor = self._filled % capacity
                heapq.heappush(self._heap, (rank, row))
            elif rank > self._heap[0][0]:
                row = heapq.heapreplace(self._heap, (rank, self._heap[0][1]))[1]
            else:
                continue
            chosen[row] = position
        if not chosen:
            return torch.empty(0, dtype=torch.long)
        rows = torch.tensor(list(chosen.keys()), dtype=torch.long)
        positions = torch.tensor(list(chosen.values()), dtype=torch.long)
        self.storage.set(rows, data[positions])
        return rows

    def state_dict(self) -> dict[str, Any]:
        return {"heap": list(self._heap), "filled": self._filled, "cursor": self._cursor}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._heap = [tuple(item) for item in state_dict["heap"]]
        heapq.heapify(self._heap)
        self._filled = int(state_dict["filled"])
        self._cursor = int(state_dict.get("cursor", 0))

    def _empty(self) -> None:
        self._heap = []
        self._filled = 0
        self._cursor = 0


class _NotATensorCollection(TypeError, RuntimeError):
    """Data that is not a TensorDict given to the writer: a ``TypeError`` (the wrong type),
    also a ``RuntimeError`` as TorchRL raises there."""


def _check_tensordict(data: Any) -> None:
    if not isinstance(data, TensorDictBase):
        raise _NotATensorCollection(
            f"TensorDictMaxValueWriter expects data to be a tensor collection (a TensorDict "
            f"with its rank_key entry), got {type(data).__name__}. Write TensorDicts, or use "
            f"RoundRobinWriter for other data."
        )
