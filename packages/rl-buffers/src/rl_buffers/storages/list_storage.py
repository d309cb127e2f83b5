"""ListStorage: a storage of arbitrary Python objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from rl_buffers.storages.storage import Storage

__all__ = ["ListStorage"]


class ListStorage(Storage):
    """Keeps items in a Python list: any object can be stored.

    ``get`` returns one item for an int and a list of items for a tensor or sequence of
    indices; the buffer's ``collate_fn`` turns that list into a batch.

    Args:
        max_size: the number of items the storage holds.

    Keyword Args:
        compilable: TorchRL's keyword; see :class:`Storage` (both values behave alike here).

    Examples:
        >>> import torch
        >>> from rl_buffers import ListStorage
        >>> storage = ListStorage(4)
        >>> storage.set(torch.tensor([0, 1]), ["a", {"b": 1}])
        >>> len(storage), storage.get(torch.tensor([1, 0]))
        (2, [{'b': 1}, 'a'])
    """

    def __init__(self, max_size: int, *, compilable: bool = False) -> None:
        super().__init__(max_size, compilable=compilable)
        self._items: list[Any] = []

    def __len__(self) -> int:
        return len(self._items)

    def set(self, index: int | slice | Tensor | Sequence[int], data: Any) -> None:
        if isinstance(index, int):
            self._put(index, data)
            return
        if isinstance(index, slice):
            index = range(*index.indices(self.max_size))
        positions = index.tolist() if isinstance(index, Tensor) else list(index)
        if not hasattr(data, "__len__") or len(data) != len(positions):
            got = len(data) if hasattr(data, "__len__") else type(data).__name__
            raise ValueError(
                f"ListStorage.set: expected {len(positions)} items for {len(positions)} indices, "
                f"got {got}. Pass a sequence with one item per index."
            )
        # In position order (stable: a repeated position keeps its last item), so that a
        # wrapped write into an empty list fills it without gaps.
        order = sorted(range(len(positions)), key=positions.__getitem__)
        for i in order:
            self._put(positions[i], data[i])

    def _put(self, position: int, item: Any) -> None:
        if not 0 <= position < self.max_size:
            raise IndexError(
                f"ListStorage.set: index {position} is outside [0, {self.max_size}) "
                f"(max_size={self.max_size})."
            )
        if position < len(self._items):
            self._items[position] = item
        elif position == len(self._items):
            self._items.append(item)
        else:
            raise IndexError(
                f"ListStorage.set: index {position} leaves a gap after the {len(self._items)} "
                f"items stored; write slots in order."
            )

    def get(self, index: int | Tensor | Sequence[int]) -> Any:
        if isinstance(index, int):
            return self._items[index]
        positions = index.tolist() if isinstance(index, Tensor) else list(index)
        items = self._items
        return [items[i] for i in positions]

    def state_dict(self) -> dict[str, Any]:
        return {"items": list(self._items), "max_size": self.max_size}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._items = list(state_dict["items"])

    def _empty(self) -> None:
        self._items = []

    def __repr__(self) -> str:
        return f"ListStorage(max_size={self.max_size}, len={len(self)})"


def stack_items(items: list[Any]) -> Any:
    """The default collate of a ListStorage batch: stacks tensors and TensorDicts.

    A batch a storage already assembled (a :class:`LazyStackStorage`'s lazy stack) is
    returned as it is.
    """
    if not isinstance(items, list):
        return items
    if items and all(isinstance(item, Tensor) for item in items):
        return torch.stack(items)
    from tensordict import TensorDictBase

    if items and all(isinstance(item, TensorDictBase) for item in items):
        return torch.stack(items)
    return items
