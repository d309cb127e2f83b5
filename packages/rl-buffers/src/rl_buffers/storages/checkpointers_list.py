"""Checkpointers of the storages that are not tensor storages: a :class:`ListStorage`'s items,
a :class:`CompressedListStorage`'s compressed records (saved as they are, not recompressed)
and a :class:`StorageEnsemble`'s storages (each through its own ``dumps``).

As the tensor checkpointers, each writes its data first and its record
(``rl_buffers_checkpoint.json``: the checkpointer and the data files' sizes and CRC-32s) last,
after removing the old one; ``loads`` reads and checks everything before it changes the
storage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rl_buffers.storages._files import atomic_save, atomic_write_json, load_file
from rl_buffers.storages._manifest import check_files, describe_files
from rl_buffers.storages.checkpointers import StorageCheckpointerBase
from rl_buffers.storages.compressed_list import CompressedListStorage
from rl_buffers.storages.ensemble import StorageEnsemble
from rl_buffers.storages.list_storage import ListStorage

__all__ = [
    "CompressedListStorageCheckpointer",
    "ListStorageCheckpointer",
    "StorageEnsembleCheckpointer",
]

_RECORD = "rl_buffers_checkpoint.json"
_ITEMS = "items.pt"


def _read_record(where: str, path: Path, checkpointer: str) -> dict[str, Any]:
    """The record of the checkpoint under ``path``, checked to be ``checkpointer``'s."""
    record_file = path / _RECORD
    if not record_file.exists():
        raise FileNotFoundError(
            f"{where}: {path} holds no complete checkpoint (no {_RECORD}; a dump killed before "
            f"its end leaves none). Pass a directory written by dumps()."
        )
    try:
        record = json.loads(record_file.read_text())
        written_by = record["checkpointer"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{where}: {record_file} is damaged ({type(error).__name__}: {error}). Nothing "
            f"was restored."
        ) from error
    if written_by != checkpointer:
        raise ValueError(
            f"{where}: {path} was written by {written_by}; set storage.checkpointer = "
            f"{written_by}() to read it."
        )
    return record


class ListStorageCheckpointer(StorageCheckpointerBase):
    """Saves a :class:`ListStorage`'s items (any picklable objects) in ``path/items.pt``.

    (TorchRL's raises ``NotImplementedError``; this one saves and restores.)

    Examples:
        >>> import tempfile
        >>> from rl_buffers import ListStorage
        >>> from rl_buffers.storages import ListStorageCheckpointer
        >>> storage = ListStorage(4)
        >>> storage.set(0, {"text": "hello"})
        >>> storage.checkpointer = ListStorageCheckpointer()
        >>> folder = tempfile.mkdtemp()
        >>> storage.dumps(folder)
        >>> other = ListStorage(4)
        >>> other.checkpointer = ListStorageCheckpointer()
        >>> other.loads(folder)
        >>> other.get(0)
        {'text': 'hello'}
    """

    def accepts(self, storage: Any) -> bool:
        """Whether this checkpointer saves ``storage`` (a list storage, not a compressed one:
        :class:`CompressedListStorageCheckpointer` saves those)."""
        return isinstance(storage, ListStorage) and not isinstance(storage, CompressedListStorage)

    def _extra(self, storage: Any) -> dict[str, Any]:
        """What the record holds beyond the items' count (checked again by :meth:`read`)."""
        return {}

    def dumps(self, storage: Any, path: str | Path) -> None:
        """Saves ``storage``'s items under the directory ``path``."""
        path = Path(path)
        where = f"{type(self).__name__}.dumps"
        if not self.accepts(storage):
            raise TypeError(f"{where}: cannot save a {type(storage).__name__}.")
        path.mkdir(parents=True, exist_ok=True)
        (path / _RECORD).unlink(missing_ok=True)  # until the new record: no checkpoint here
        atomic_save(storage.state_dict(), path / _ITEMS)
        record = {
            "checkpointer": type(self).__name__,
            "files": describe_files(path, [path / _ITEMS]),
            "len": len(storage),
            "max_size": storage.max_size,
            **self._extra(storage),
        }
        atomic_write_json(record, path / _RECORD)

    def read(self, storage: Any, path: str | Path) -> tuple[dict[str, Any], Any]:
        """Reads and checks a checkpoint, changing nothing; :meth:`restore` applies it.

        Raises:
            FileNotFoundError: ``path`` holds no complete checkpoint.
            ValueError: the record or the items' file is damaged, or was written by another
                checkpointer, or the items do not fit ``storage``.
        """
        path = Path(path)
        where = f"{type(self).__name__}.loads"
        record = _read_record(where, path, type(self).__name__)
        if record.get("files") is not None:
            check_files(where, path, record["files"])
        state = load_file(where, path / _ITEMS)
        items = state.get("items") if isinstance(state, dict) else None
        if not isinstance(items, list) or len(items) != record.get("len"):
            raise ValueError(
                f"{where}: {path / _ITEMS} does not hold the {record.get('len')} items its "
                f"record lists. Nothing was restored."
            )
        if len(items) > storage.max_size:
            raise ValueError(
                f"{where}: the checkpoint holds {len(items)} items; this storage's max_size is "
                f"{storage.max_size}. Build it with max_size >= {len(items)}. Nothing was "
                f"restored."
            )
        for key, value in self._extra(storage).items():
            if record.get(key) != value:
                raise ValueError(
                    f"{where}: the checkpoint was written with {key}={record.get(key)!r}; this "
                    f"storage has {value!r}. Nothing was restored."
                )
        return record, state

    def restore(self, storage: Any, saved: tuple[dict[str, Any], Any]) -> None:
        """Puts the items :meth:`read` returned into ``storage``."""
        storage.load_state_dict(saved[1])


class CompressedListStorageCheckpointer(ListStorageCheckpointer):
    """Saves a :class:`CompressedListStorage`'s compressed records as they are (nothing is
    decompressed or compressed again) in ``path/items.pt``.

    The record names the storage's decompression function; ``loads`` refuses a storage whose
    function differs (the bytes would not decompress).
    """

    def accepts(self, storage: Any) -> bool:
        """Whether ``storage`` is a :class:`CompressedListStorage`."""
        return isinstance(storage, CompressedListStorage)

    def _extra(self, storage: Any) -> dict[str, Any]:
        decompress = storage.decompression_fn
        name = f"{decompress.__module__}.{getattr(decompress, '__qualname__', type(decompress))}"
        return {"decompression_fn": name}


def _parts(ensemble: StorageEnsemble) -> list[Any]:
    """The ensemble's storages (``ensemble[i]`` names storage ``i``)."""
    parts: list[Any] = []
    while True:
        try:
            parts.append(ensemble[len(parts)])
        except IndexError:
            return parts


class StorageEnsembleCheckpointer(StorageCheckpointerBase):
    """Saves each storage of a :class:`StorageEnsemble` under ``path/storage_<i>/`` with the
    storage's own ``dumps`` (its checkpointer, if it has one).

    ``loads`` reads every storage's checkpoint before it restores any.
    """

    def accepts(self, storage: Any) -> bool:
        """Whether ``storage`` is a :class:`StorageEnsemble`."""
        return isinstance(storage, StorageEnsemble)

    def dumps(self, storage: Any, path: str | Path) -> None:
        """Saves every storage of the ensemble under ``path/storage_<i>``."""
        path = Path(path)
        if not self.accepts(storage):
            raise TypeError(f"{type(self).__name__}.dumps: cannot save a {type(storage).__name__}.")
        path.mkdir(parents=True, exist_ok=True)
        (path / _RECORD).unlink(missing_ok=True)
        parts = _parts(storage)
        for i, part in enumerate(parts):
            part.dumps(path / f"storage_{i}")
        record = {
            "checkpointer": type(self).__name__,
            "storages": [type(part).__name__ for part in parts],
        }
        atomic_write_json(record, path / _RECORD)

    def read(self, storage: Any, path: str | Path) -> tuple[dict[str, Any], Any]:
        """Reads and checks every storage's checkpoint, changing nothing.

        Raises:
            FileNotFoundError: ``path`` holds no complete checkpoint.
            ValueError: the checkpoint holds another number or kind of storages, or one of
                them is damaged (the message names it).
        """
        path = Path(path)
        where = f"{type(self).__name__}.loads"
        record = _read_record(where, path, type(self).__name__)
        parts = _parts(storage)
        kinds = [type(part).__name__ for part in parts]
        if record.get("storages") != kinds:
            raise ValueError(
                f"{where}: the checkpoint holds the storages {record.get('storages')}; this "
                f"ensemble has {kinds}. Nothing was restored."
            )
        return record, [part._read_saved(path / f"storage_{i}") for i, part in enumerate(parts)]

    def restore(self, storage: Any, saved: tuple[dict[str, Any], Any]) -> None:
        """Restores every storage from what :meth:`read` returned."""
        for part, content in zip(_parts(storage), saved[1], strict=True):
            part._load_saved(content)
