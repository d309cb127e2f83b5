"""StorageEnsemble: several storages read as one, item by (storage id, index)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from rl_buffers.storages.storage import Storage

__all__ = ["StorageEnsemble"]


class StorageEnsemble(Storage):
    """The storages of a :class:`~rl_buffers.ReplayBufferEnsemble`, read together.

    It is read-only: items are written into each storage through its own buffer.
    ``get((buffer_ids, indices))`` reads ``indices[k]`` from storage ``buffer_ids[k]`` and
    returns the list of what each storage gave; ``ensemble[i]`` with an int is storage
    ``i``; ``len()`` is the number of items of all storages together.

    Args:
        *storages: the storages, in buffer-id order.
        transforms: one rl-core ``Transform`` (or None) per storage, run on what that
            storage gives (the ensemble buffer fills them from its buffers' transforms).

    Raises:
        ValueError: no storage, or ``transforms`` of another length.
        TypeError: an argument is not a :class:`Storage`.

    Examples:
        >>> import torch
        >>> from rl_buffers import LazyTensorStorage, StorageEnsemble
        >>> a, b = LazyTensorStorage(10), LazyTensorStorage(10)
        >>> a.set(torch.arange(3), torch.zeros(3)); b.set(torch.arange(2), torch.ones(2))
        >>> ensemble = StorageEnsemble(a, b)
        >>> len(ensemble), [x.tolist() for x in ensemble.get(([1, 0], [torch.tensor([1]), torch.tensor([2])]))]
        (5, [[1.0], [0.0]])
    """

    def __init__(self, *storages: Storage, transforms: Sequence[Any] | None = None) -> None:
        if not storages:
            raise ValueError("StorageEnsemble: expected at least one storage, got none.")
        for i, storage in enumerate(storages):
            if not isinstance(storage, Storage):
                raise TypeError(
                    f"StorageEnsemble: expected Storage instances, got "
                    f"{type(storage).__name__} at position {i}."
                )
        if transforms is not None and len(transforms) != len(storages):
            raise ValueError(
                f"StorageEnsemble: expected one transform (or None) per storage, "
                f"{len(storages)}, got {len(transforms)}."
            )
        self._storages = list(storages)
        self._transforms = list(transforms) if transforms is not None else [None] * len(storages)
        self.max_size = sum(storage.max_size for storage in storages)

    def __len__(self) -> int:
        return sum(len(storage) for storage in self._storages)

    def __getitem__(self, index: Any) -> Any:  # an int names a storage
        if isinstance(index, int) and not isinstance(index, bool):
            return self._storages[index]
        return super().__getitem__(index)

    def get(self, index: Any) -> list[Any]:
        """``index = (buffer_ids, indices)``: reads ``indices[k]`` from storage
        ``buffer_ids[k]``; returns a list with one batch per entry of ``buffer_ids``."""
        if not (isinstance(index, tuple) and len(index) == 2):
            raise TypeError(
                f"StorageEnsemble.get: expected a pair (buffer_ids, indices), got "
                f"{type(index).__name__}; read one storage with ensemble[i]."
            )
        buffer_ids, indices = index
        if isinstance(buffer_ids, Tensor):
            buffer_ids = buffer_ids.tolist()
        out = []
        for buffer_id, idx in zip(buffer_ids, indices, strict=True):
            data = self._storages[buffer_id].get(idx)
            transform = self._transforms[buffer_id]
            out.append(transform(data) if transform is not None and len(transform) else data)
        return out

    def set(self, index: Any, data: Any) -> None:
        raise RuntimeError(
            "StorageEnsemble is read-only; write into one storage (ensemble[i].set) or through "
            "its buffer."
        )

    def state_dict(self) -> dict[str, Any]:
        return {"storages": [storage.state_dict() for storage in self._storages]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved = state_dict["storages"]
        if len(saved) != len(self._storages):
            raise ValueError(
                f"StorageEnsemble.load_state_dict: expected {len(self._storages)} storages' "
                f"states, got {len(saved)}."
            )
        for storage, state in zip(self._storages, saved, strict=True):
            storage.load_state_dict(state)

    def _empty(self) -> None:
        for storage in self._storages:
            storage.empty()

    def __repr__(self) -> str:
        return f"StorageEnsemble({', '.join(repr(s) for s in self._storages)})"
