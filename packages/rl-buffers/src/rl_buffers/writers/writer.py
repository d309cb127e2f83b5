"""Writer: the base of every replay-buffer writer."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from rl_buffers.storages.storage import Storage, check_compilable

__all__ = ["Writer"]


class Writer:
    """Decides where new items go in a storage.

    ``add(item)`` and ``extend(batch)`` write into the registered storage and return the rows
    written (an int for ``add``, a 1-D tensor for ``extend``). Subclasses implement both,
    ``state_dict``, ``load_state_dict`` and ``_empty``.

    Args:
        compilable: TorchRL's flag for a writer whose cursor is a plain value
            ``torch.compile`` traces rather than a multiprocessing value shared with forked
            processes. Writers here always keep their cursor in the process, so both values
            behave alike. Defaults to False.

    Raises:
        TypeError: ``compilable`` is not a bool.
    """

    def __init__(self, compilable: bool = False) -> None:
        self._storage: Storage | None = None
        self.compilable = check_compilable(type(self).__name__, compilable)

    def register_storage(self, storage: Storage) -> None:
        """Attaches the storage to write into (the buffer calls this)."""
        self._storage = storage

    @property
    def storage(self) -> Storage:
        if self._storage is None:
            raise RuntimeError(
                f"{type(self).__name__}: no storage registered; put the writer in a replay "
                f"buffer or call register_storage(storage)."
            )
        return self._storage

    def add(self, data: Any) -> int:
        raise NotImplementedError

    def extend(self, data: Any) -> Tensor:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        raise NotImplementedError

    def _empty(self) -> None:
        raise NotImplementedError
