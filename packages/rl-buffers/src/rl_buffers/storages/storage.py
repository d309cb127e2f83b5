"""Storage: the base of every replay-buffer storage."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_buffers.storages._files import atomic_save, atomic_write_json, load_file
from rl_buffers.storages._manifest import FILES_RECORD, check_files_record, describe_files
from rl_buffers.storages.checkpointers import StorageCheckpointerBase

__all__ = ["Storage"]


def check_compilable(where: str, compilable: Any) -> bool:
    """``compilable`` checked to be a bool (TorchRL's keyword of storages, writers and
    buffers).

    Raises:
        TypeError: it is not a bool.
    """
    if not isinstance(compilable, bool):
        raise TypeError(
            f"{where}: expected compilable to be a bool, got {type(compilable).__name__} "
            f"({compilable!r})."
        )
    return compilable


class Storage:
    """Where a replay buffer keeps its items: a fixed number of slots read and written by index.

    A storage knows nothing about the order of writes (the writer's job) or about which items
    to read (the sampler's job). Subclasses implement ``set``, ``get``, ``__len__``,
    ``state_dict``, ``load_state_dict`` and ``_empty``; ``dumps``/``loads`` save the state
    dict with ``torch.save`` unless a subclass writes its own layout.

    Rows and items: a storage with ``ndim > 1`` keeps items in a grid ``[rows, *inner]``;
    writers write whole rows (dim 0), samplers draw flat item numbers in ``[0, len)`` that
    the storage unravels. With ``ndim == 1`` rows and items coincide.

    Args:
        max_size: the number of items the storage holds.

    Keyword Args:
        compilable: TorchRL's flag for a storage whose bookkeeping (length, write position)
            is kept in the process, as plain values ``torch.compile`` traces, rather than
            in multiprocessing values shared with forked processes. Here every storage
            keeps it in the process, so both values behave alike: tensor storages'
            ``set`` and ``get`` trace under ``torch.compile(fullgraph=True)``, and a copy
            of a storage in another process counts its own length (memory-mapped and
            shared-memory data stay shared). Defaults to False.

    Raises:
        ValueError: ``max_size`` is not a positive integer.
        TypeError: ``compilable`` is not a bool.
    """

    ndim: int = 1
    compilable: bool = False
    _checkpointer: Any = None
    # Each row's write count less one (-1: never written), kept by the round-robin writers
    # once one of them tracks generations (RoundRobinWriter(track_generations=True)). It sits
    # on the storage so every buffer writing into it sees the others' writes.
    slot_generations: Tensor | None = None

    def __init__(self, max_size: int, *, compilable: bool = False) -> None:
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
            raise ValueError(
                f"{type(self).__name__}: expected max_size to be a positive int, got {max_size!r}."
            )
        self.max_size = max_size
        self.compilable = check_compilable(type(self).__name__, compilable)

    # ---------------------------------------------------------------- the contract
    def set(self, index: int | slice | Tensor, data: Any) -> None:
        """Writes ``data`` at rows ``index`` (an int writes one item)."""
        raise NotImplementedError

    def get(self, index: int | Tensor) -> Any:
        """Reads the items at flat item numbers ``index``."""
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        raise NotImplementedError

    def _empty(self) -> None:
        raise NotImplementedError

    # ---------------------------------------------------------------- checkpointer
    @property
    def checkpointer(self) -> Any:
        """How :meth:`dumps`/:meth:`loads` lay the storage out on disk (TorchRL's
        ``storage.checkpointer = ...``); None: the storage's own layout.

        Raises:
            TypeError: (on assignment) not a ``StorageCheckpointerBase``, or this storage
                is not a tensor storage.
        """
        return self._checkpointer

    @checkpointer.setter
    def checkpointer(self, value: Any) -> None:
        name = type(self).__name__
        if value is not None and not isinstance(value, StorageCheckpointerBase):
            raise TypeError(
                f"{name}.checkpointer: expected a StorageCheckpointerBase (e.g. "
                f"TensorStorageCheckpointer()) or None, got {type(value).__name__}."
            )
        if value is not None and not value.accepts(self):
            raise TypeError(
                f"{name}.checkpointer: {type(value).__name__} cannot save a {name}; tensor "
                f"checkpointers save tensor storages (TensorStorage, LazyTensorStorage, "
                f"LazyMemmapStorage), ListStorageCheckpointer, "
                f"CompressedListStorageCheckpointer and StorageEnsembleCheckpointer the others."
            )
        self._checkpointer = value

    # ---------------------------------------------------------------- derived
    def __getitem__(self, index: int | slice | Sequence[int] | Tensor) -> Any:
        """Items by position among the stored ones, as a sequence is indexed.

        An int gives one item (negative counts from the end); a slice, a list or a tensor of
        ints (an empty one gives an empty batch, as TorchRL), or a boolean mask of
        ``len(self)`` gives a batch, read as :meth:`get` reads
        (positions are flat item numbers, ``[0, len)``). Slots not written yet are not
        reachable: ``storage[0:5]`` of a storage holding 3 items gives 3.

        Raises:
            IndexError: a position is outside ``[-len, len)``.

        Examples:
            >>> import torch
            >>> from rl_buffers import LazyTensorStorage
            >>> storage = LazyTensorStorage(10)
            >>> storage.set(torch.arange(4), torch.arange(4.0))
            >>> storage[1:3].tolist(), storage[-1].item(), storage[[0, 2]].tolist()
            ([1.0, 2.0], 3.0, [0.0, 2.0])
        """
        return self.get(self._positions(index))

    def _positions(self, index: Any) -> int | Tensor:
        """Flat item numbers in ``[0, len)`` of a user's index (see :meth:`__getitem__`)."""
        n = len(self)
        where = f"{type(self).__name__}[...]"
        if isinstance(index, slice):
            span = range(n)[index]  # (Python's slice rules; torch refuses negative steps)
            return torch.arange(span.start, span.stop, span.step)
        if isinstance(index, int) and not isinstance(index, bool):
            if not -n <= index < n:
                raise IndexError(f"{where}: index {index} is out of range for {n} items.")
            return index + n if index < 0 else index
        try:
            positions = torch.as_tensor(index)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(
                f"{where}: expected an int, a slice, a list or tensor of ints or a boolean "
                f"mask, got {type(index).__name__}."
            ) from error
        if positions.dtype == torch.bool:
            if positions.shape != (n,):
                raise IndexError(
                    f"{where}: a boolean mask needs shape ({n},) (one entry per item), got "
                    f"{tuple(positions.shape)}."
                )
            return torch.arange(n)[positions.cpu()]
        if not positions.numel() and positions.dtype != torch.bool:
            # (an empty list becomes a float tensor: no position, an empty batch)
            positions = positions.to(torch.long)
        if positions.is_floating_point() or positions.is_complex():
            raise TypeError(f"{where}: expected integer positions, got {positions.dtype}.")
        positions = positions.to("cpu", torch.long)
        if positions.numel():
            low, high = (int(value) for value in torch.aminmax(positions))
            if low < -n or high >= n:
                raise IndexError(
                    f"{where}: positions in [{low}, {high}] are out of range for {n} items "
                    f"(expected [-{n}, {n}))."
                )
        positions = torch.where(positions < 0, positions + n, positions)
        return int(positions) if positions.dim() == 0 else positions

    def __setitem__(self, index: int | slice | Tensor, data: Any) -> None:
        self.set(index, data)

    def empty(self) -> None:
        """Forgets every item (the allocated memory, if any, is kept)."""
        self._empty()

    def rows_for(self, data: Any) -> int:
        """How many rows (writer slots along dim 0) the storage has, given a batch to write."""
        return self.max_size

    @property
    def num_rows(self) -> int:
        """Rows written so far (equals ``len(self)`` when ``ndim == 1``)."""
        return len(self)

    def unravel(self, flat: Tensor) -> Tensor | tuple[Tensor, ...]:
        """Maps flat item numbers to the storage's index (a tuple of tensors if ``ndim > 1``)."""
        return flat

    def ravel(self, index: Any) -> Tensor:
        """Maps a storage index (as returned by :meth:`unravel`) to flat item numbers."""
        return torch.as_tensor(index, dtype=torch.long).reshape(-1)

    def dumps(self, path: str | Path) -> None:
        """Saves the storage under the directory ``path`` (created if missing)."""
        if self._checkpointer is not None:
            self._checkpointer.dumps(self, path)
            return
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        # the manifest goes first and comes back last: a dump killed in between leaves
        # storage.pt (renamed into place whole) without one, read as an earlier version's
        (path / FILES_RECORD).unlink(missing_ok=True)
        atomic_save(self.state_dict(), path / "storage.pt")
        atomic_write_json(
            {"files": describe_files(path, [path / "storage.pt"])}, path / FILES_RECORD
        )

    def loads(self, path: str | Path) -> None:
        """Restores what :meth:`dumps` saved under ``path``.

        Raises:
            FileNotFoundError: ``path`` holds no saved storage.
            ValueError: a saved file is damaged (its size or CRC-32 differs from the
                manifest the dump wrote), or the saved storage does not fit this one; the
                storage is left as it was.
        """
        self._load_saved(self._read_saved(path))

    def _read_saved(self, path: str | Path) -> Any:
        """Reads and parses what :meth:`dumps` saved under ``path``, changing nothing; the
        first half of :meth:`loads` (a buffer reads every part before it restores any)."""
        if self._checkpointer is not None:
            return _Checkpoint(self._checkpointer.read(self, path))
        where = f"{type(self).__name__}.loads"
        file = Path(path) / "storage.pt"
        if not file.exists():
            raise FileNotFoundError(
                f"{where}: no saved storage at {file}. Pass the directory given to dumps()."
            )
        check_files_record(where, Path(path))
        state = load_file(where, file)
        self._check_state(where, state)
        return state

    def _check_state(self, where: str, state: Any) -> None:
        """Raises ValueError unless the state dict ``state`` fits this storage; changes
        nothing. (The base accepts any: a list storage takes what it is given.)"""

    def _load_saved(self, saved: Any) -> None:
        """Restores what :meth:`_read_saved` returned; the second half of :meth:`loads`."""
        if isinstance(saved, _Checkpoint):
            self._checkpointer.restore(self, saved.content)
            return
        self.load_state_dict(saved)


class _Checkpoint:
    """What a checkpointer read (tells ``_load_saved`` apart from a state dict)."""

    def __init__(self, content: Any) -> None:
        self.content = content
