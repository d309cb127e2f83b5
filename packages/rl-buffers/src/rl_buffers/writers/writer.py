"""Writer: the base of every replay-buffer writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import Tensor

from rl_buffers.storages._files import atomic_save, load_file
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

    def dumps(self, path: str | Path) -> None:
        """Saves the writer's state (its ``state_dict``) into the folder ``path`` (created if
        needed; a second call overwrites it), as TorchRL's writers do.

        Args:
            path: the folder.
        """
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_save(self.state_dict(), folder / _STATE_FILE)

    def loads(self, path: str | Path) -> None:
        """Loads the state :meth:`dumps` saved in the folder ``path``.

        Args:
            path: the folder.

        Raises:
            FileNotFoundError: the folder holds no saved writer state.
            ValueError: the saved state cannot be read back.
        """
        self.load_state_dict(load_file(f"{type(self).__name__}.loads", Path(path) / _STATE_FILE))

    def _empty(self) -> None:
        raise NotImplementedError


_STATE_FILE = "writer_state.pt"
