"""LazyStackStorage: a ListStorage of TensorDicts read as lazy stacks (ragged items kept)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase, lazy_stack
from torch import Tensor

from rl_buffers.storages.list_storage import ListStorage

__all__ = ["LazyStackStorage"]


class LazyStackStorage(ListStorage):
    """A :class:`ListStorage` whose batches are lazy stacks of the stored TensorDicts.

    Items keep their own shapes (token sequences of different lengths, say): a batch read
    with a tensor or sequence of indices is ``tensordict.lazy_stack(items, stack_dim)``,
    with no copy and no padding; an int index returns the item itself.

    Args:
        max_size: the number of items the storage holds; None (the default, as
            TorchRL's) for no limit.
        stack_dim: the dimension of the batch in the lazy stack. Defaults to 0.
        device: where read items go; None (the default) keeps them where they were
            written.
        compilable: TorchRL's keyword; see :class:`Storage` (both values behave alike here).

    Raises:
        ValueError: ``stack_dim`` is not an int.
        TypeError: a read item is not a TensorDict.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyStackStorage, ReplayBuffer
        >>> buffer = ReplayBuffer(storage=LazyStackStorage(), batch_size=2)
        >>> _ = buffer.add(TensorDict({"tokens": torch.arange(3)}, []))
        >>> _ = buffer.add(TensorDict({"tokens": torch.arange(5)}, []))
        >>> batch = buffer[[0, 1]]
        >>> type(batch).__name__, batch.batch_size
        ('LazyStackedTensorDict', torch.Size([2]))
        >>> [td["tokens"].shape[0] for td in batch.tensordicts]
        [3, 5]
    """

    def __init__(
        self,
        max_size: int | None = None,
        *,
        stack_dim: int = 0,
        device: torch.device | str | None = None,
        compilable: bool = False,
    ) -> None:
        super().__init__(sys.maxsize if max_size is None else max_size, compilable=compilable)
        if isinstance(stack_dim, bool) or not isinstance(stack_dim, int):
            raise ValueError(
                f"LazyStackStorage: expected stack_dim to be an int, got {stack_dim!r}."
            )
        self._unbounded = max_size is None
        self.stack_dim = stack_dim
        self.device = None if device is None else torch.device(device)

    def get(self, index: int | Tensor | Sequence[int]) -> Any:
        items = super().get(index)
        if isinstance(index, int):
            return items if self.device is None else items.to(self.device)
        # No index: an empty batch (as TorchRL), shaped by a stored item when there is one.
        template = items[:1] or self._items[:1]
        for item in [*items, *template]:
            if not isinstance(item, TensorDictBase):
                raise TypeError(
                    f"LazyStackStorage.get: expected TensorDict items, got "
                    f"{type(item).__name__}; store TensorDicts or use ListStorage."
                )
        if not template:
            return TensorDict(batch_size=[0], device=self.device)
        dim = self.stack_dim
        if dim < 0:
            dim += template[0].batch_dims + 1
        if not items:
            out = lazy_stack(list(template), dim)[(slice(None),) * dim + (slice(0, 0),)]
            return out if self.device is None else out.to(self.device)
        out = lazy_stack(list(items), dim)
        return out if self.device is None else out.to(self.device)

    def __repr__(self) -> str:
        size = None if self._unbounded else self.max_size
        return f"LazyStackStorage(max_size={size}, len={len(self)}, stack_dim={self.stack_dim})"
