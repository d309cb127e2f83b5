"""Writer: the base of every replay-buffer writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
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

    @property
    def tracks_generations(self) -> bool:
        """Whether the writer stamps the rows it writes with a generation (see
        :meth:`generations_of`); False for a writer that was not asked to."""
        return False

    def generations_of(self, index: Any) -> Tensor:
        """Each row's generation stamp: ``-1`` (no usable stamp) for a writer that does not
        track generations (see :class:`RoundRobinWriter`'s ``track_generations=``).

        Args:
            index: rows (an int or a tensor), or a storage index as a buffer returns it.

        Returns:
            An int64 tensor shaped like the rows of ``index``, on its device.
        """
        rows = generation_rows(index, self._storage)
        return torch.full(rows.shape, -1, dtype=torch.int64, device=rows.device)

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


def generation_rows(index: Any, storage: Storage | None) -> Tensor:
    """The rows (dim-0 slots) a :meth:`Writer.generations_of` index names: a tuple (a
    multi-dim storage's unravelled index) by its first part, a ``[N, ndim]`` tensor of
    coordinates of a multi-dim storage by its first column, anything else as rows."""
    if isinstance(index, tuple):
        index = index[0]
    rows = torch.as_tensor(index)
    ndim = getattr(storage, "ndim", 1)
    if ndim > 1 and rows.dim() >= 2 and rows.shape[-1] == ndim:
        rows = rows[..., 0]
    if rows.is_floating_point() or rows.dtype == torch.bool:
        raise TypeError(
            f"generations_of: expected integer rows, got a {rows.dtype} tensor. Pass the "
            f"index a buffer's extend or sample gave."
        )
    return rows.long()
