"""ImmutableDatasetWriter: the writer of a read-only dataset (every write refused)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from rl_buffers.writers.writer import Writer

__all__ = ["ImmutableDatasetWriter"]


class ImmutableDatasetWriter(Writer):
    """Refuses every write: the writer of a buffer that serves a dataset as published.

    ``add``, ``extend``, ``write_at`` and emptying the buffer raise ``RuntimeError`` naming
    the dataset (or, without one, the storage), and nothing is written.

    Args:
        dataset: how errors name the buffer, e.g. ``"D4RLExperienceReplay('hopper-medium-v2')"``.
            Defaults to None (the storage is named).

    Keyword Args:
        compilable: TorchRL's keyword; see :class:`Writer`.

    Examples:
        >>> import torch
        >>> from rl_buffers import ImmutableDatasetWriter, LazyTensorStorage, ReplayBuffer
        >>> buffer = ReplayBuffer(storage=LazyTensorStorage(4), writer=ImmutableDatasetWriter("demo"))
        >>> try:
        ...     buffer.extend(torch.zeros(2, 1))
        ... except RuntimeError as error:
        ...     print(error)
        demo is a read-only dataset: extend refused, nothing was written. Copy its items into a ReplayBuffer of your own to write.
    """

    def __init__(self, dataset: str | None = None, *, compilable: bool = False) -> None:
        super().__init__(compilable)
        if dataset is not None and not isinstance(dataset, str):
            raise TypeError(
                f"ImmutableDatasetWriter: expected dataset to be a str naming the buffer or "
                f"None, got {type(dataset).__name__}."
            )
        self.dataset = dataset

    def _refuse(self, what: str) -> RuntimeError:
        name = self.dataset
        if name is None:
            storage = self._storage
            name = f"the buffer over {storage!r}" if storage is not None else "this buffer"
        return RuntimeError(
            f"{name} is a read-only dataset: {what} refused, nothing was written. Copy its "
            f"items into a ReplayBuffer of your own to write."
        )

    def add(self, data: Any) -> int:
        raise self._refuse("add")

    def extend(self, data: Any) -> Tensor:
        raise self._refuse("extend")

    def write_at(self, index: Any, data: Any, *, cursor: int | None = None) -> Tensor:
        raise self._refuse("write_at")

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        return None

    def _empty(self) -> None:
        raise self._refuse("empty")

    def __repr__(self) -> str:
        return f"ImmutableDatasetWriter(dataset={self.dataset!r})"
