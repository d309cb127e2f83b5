"""LazyMemmapStorage: a tensor storage in memory-mapped files, reloadable from disk."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import torch
from tensordict import MemoryMappedTensor, TensorDict, TensorDictBase
from torch import Tensor

from rl_buffers.storages import _undo
from rl_buffers.storages._files import atomic_write_json
from rl_buffers.storages._manifest import check_files, describe_files
from rl_buffers.storages.tensor_storage import TensorStorage

__all__ = ["LazyMemmapStorage"]

_META = "rl_buffers_storage.json"
_LENGTH = "rl_buffers_length.memmap"
_HALF = 2**32  # the length word packs len_rows * 2**32 + next_row


def _write_length_file(folder: Path, len_rows: int, next_row: int) -> None:
    with open(folder / _LENGTH, "wb") as handle:
        handle.write((len_rows * _HALF + next_row).to_bytes(8, "little", signed=True))


def _open_length(folder: Path) -> Tensor:
    """The length word of ``folder``, mapped shared (writes reach the file)."""
    return MemoryMappedTensor.from_filename(
        str(folder / _LENGTH), dtype=torch.int64, shape=(1,)
    ).as_subclass(Tensor)


class LazyMemmapStorage(TensorStorage):
    """A lazy storage whose items live in memory-mapped files (tensordict's memmap layout).

    The files are created in ``scratch_dir`` when the first batch arrives. After every write
    the storage records its length and cursor, after the data, in one 8-byte word of the
    memory-mapped ``scratch_dir/rl_buffers_length.memmap`` (a single aligned store: a killed
    process leaves the old or the new value); ``rl_buffers_storage.json`` (its layout, renamed
    into place after the first write) marks the directory as holding a storage. If the
    process dies, the directory still
    holds every item whose write had returned, and ``loads(scratch_dir)`` in a new process
    (or :func:`LazyMemmapStorage.load`) reopens them. Memory-mapped files are shared: a
    storage pickled to another process reads and writes the same memory.

    Items are never served torn. Before a write overwrites rows that hold items, their old
    contents are saved to an undo journal (``scratch_dir/rl_buffers_undo``, as large as the
    largest overwrite); reopening a directory whose writer was killed mid-overwrite puts
    those rows back first, so each item is whole: as the interrupted write left it if the
    write had completed, else as it was before (see the README's "Crash safety").

    Args:
        max_size: the number of items the storage holds.

    Keyword Args:
        scratch_dir: directory of the files. Defaults to a fresh temporary directory.
        device: where sampled items are returned; the files are always on CPU. Only
            ``"cpu"`` is supported for now.
        ndim: leading batch dims that index items (see :class:`LazyTensorStorage`).
        existsok: whether ``scratch_dir`` may already hold a storage, which is then
            overwritten. Defaults to False (raise instead).
        compilable: TorchRL's keyword; see :class:`Storage` (both values behave alike here).

    Raises:
        FileExistsError: ``scratch_dir`` holds a storage and ``existsok`` is False.

    Examples:
        >>> import tempfile, torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyMemmapStorage
        >>> folder = tempfile.mkdtemp()
        >>> storage = LazyMemmapStorage(10, scratch_dir=folder)
        >>> storage.set(torch.arange(3), TensorDict({"obs": torch.ones(3, 2)}, [3]))
        >>> len(LazyMemmapStorage.load(folder))
        3
    """

    def __init__(
        self,
        max_size: int,
        *,
        scratch_dir: str | Path | None = None,
        device: torch.device | str | None = "cpu",
        ndim: int = 1,
        existsok: bool = False,
        compilable: bool = False,
    ) -> None:
        if device is not None and torch.device(device).type != "cpu":
            raise ValueError(
                f"LazyMemmapStorage: expected device='cpu' (memory-mapped files live in host "
                f"memory), got {device!r}. Move samples with a transform or use LazyTensorStorage."
            )
        super().__init__(None, max_size, device="cpu", ndim=ndim, compilable=compilable)
        self.scratch_dir = Path(scratch_dir) if scratch_dir is not None else None
        self.existsok = existsok
        self._journal: _undo.UndoJournal | None = None
        self._length: Tensor | None = None  # the mapped length word, once published

    def _allocate(self, template: Tensor | TensorDictBase, rows: int) -> Tensor | TensorDictBase:
        if self.scratch_dir is None:
            self.scratch_dir = Path(tempfile.mkdtemp(prefix="rl_buffers_"))
        folder = self.scratch_dir
        if (folder / _META).exists() and not self.existsok:
            raise FileExistsError(
                f"LazyMemmapStorage: {folder} already holds a storage. Pass existsok=True to "
                f"overwrite it, or reopen it with LazyMemmapStorage.load({str(folder)!r})."
            )
        folder.mkdir(parents=True, exist_ok=True)
        (folder / _META).unlink(missing_ok=True)
        _undo.discard(folder)  # a journal of the storage replaced here must not be replayed
        self._journal = None
        self._length = None
        if rows >= 2**31:
            raise ValueError(
                f"LazyMemmapStorage: expected fewer than 2**31 rows, got {rows}; split the "
                f"data over several storages."
            )
        shape = (rows, *template.shape[1 : self.ndim])
        if isinstance(template, Tensor):
            return MemoryMappedTensor.empty(
                (*shape, *template.shape[self.ndim :]),
                dtype=template.dtype,
                filename=str(folder / "data.memmap"),
                existsok=True,
            )
        # The items' own batch dims after the storage's stay (``[B, T]`` items of a 1-D
        # storage are kept as ``[rows, T]``), as in TorchRL.
        item = template[(0,) * self.ndim]
        like = item.expand(*shape, *item.batch_size).cpu()
        return like.memmap_like(prefix=folder, existsok=True)

    def _writing(self, index: slice | Tensor) -> None:
        # Rows below the length hold items: their old contents go to the undo journal
        # before the write touches them. (Rows past the length hold no item until the
        # length record, written after the data, counts them.)
        filled = self._len_rows
        if not filled:
            return
        if type(index) is slice:
            start, stop, step = index.indices(self._rows)
            if start >= filled:
                return
            rows = torch.arange(start, min(stop, filled), step)
        else:
            rows = index.reshape(-1).cpu()
            rows = rows[rows < filled]
        if not rows.numel():
            return
        journal = self._journal
        if journal is None or journal.capacity < rows.numel():
            journal = self._journal = _undo.UndoJournal(
                self.scratch_dir, self._tree.leaves, max(rows.numel(), 1)
            )
        journal.save(rows, self._tree.leaves)

    def _written(self, stop: int) -> None:
        # The data sits in shared file mappings (it survives the process); the length is
        # published after it, in one aligned 8-byte store, and only then is the undo journal
        # released. The first write in a directory also publishes its layout record.
        length = self._length
        if length is None:
            self._publish(self.scratch_dir)
            self._length = _open_length(self.scratch_dir)
        else:
            length.fill_(self._len_rows * _HALF + self._next_row)
        if self._journal is not None:
            self._journal.clear()

    def _publish(self, folder: Path, *, files: dict[str, Any] | None = None) -> None:
        """Writes the length word, then renames the layout record into ``folder``; a dump's
        record lists its data ``files`` (a live scratch dir's cannot: its files change)."""
        _write_length_file(folder, self._len_rows, self._next_row)
        record = {
            "max_size": self.max_size,
            "ndim": self.ndim,
            "len_rows": self._len_rows,
            "next_row": self._next_row,
            "is_tensor": isinstance(self._data, Tensor),
            "length_file": _LENGTH,
        }
        if files is not None:
            record["files"] = files
        atomic_write_json(record, folder / _META)

    # ---------------------------------------------------------------- disk
    def dumps(self, path: str | Path) -> None:
        """Writes the storage to ``path`` in the layout :meth:`load` reads."""
        if self._checkpointer is not None:
            self._checkpointer.dumps(self, path)
            return
        path = Path(path)
        if self._data is None:
            raise RuntimeError("LazyMemmapStorage.dumps: the storage is empty; nothing to save.")
        if self.scratch_dir is not None and path.resolve() == self.scratch_dir.resolve():
            self._written(self._len_rows)
            return
        path.mkdir(parents=True, exist_ok=True)
        # Until the new length record is in place, the directory holds no storage: a dump
        # killed halfway is refused by load, never read as old records over new rows.
        (path / _META).unlink(missing_ok=True)
        _undo.discard(path)
        if isinstance(self._data, Tensor):
            MemoryMappedTensor.from_tensor(
                self._data, filename=str(path / "data.memmap"), existsok=True
            )
        else:
            self._data.memmap(prefix=path, copy_existing=True, existsok=True)
        self._publish(path, files=describe_files(path, _data_files(path)))

    def loads(self, path: str | Path) -> None:
        """Reads a storage saved by :meth:`dumps` (or a scratch dir) into this one.

        The data is copied into this storage's own files, unless ``path`` is its
        ``scratch_dir`` (then the files are reopened in place).

        Raises:
            FileNotFoundError: ``path`` holds no storage.
            ValueError: its files are damaged or do not match this storage; the storage is
                left as it was.
        """
        self._load_saved(self._read_saved(path))

    def _read_saved(self, path: str | Path) -> Any:
        if self._checkpointer is not None:
            return super()._read_saved(path)
        data, meta = _read(path)
        in_place = (
            self.scratch_dir is not None and self.scratch_dir.resolve() == Path(path).resolve()
        )
        if (
            self._data is None
            and not in_place
            and ((meta["max_size"], meta["ndim"]) != (self.max_size, self.ndim))
        ):
            raise ValueError(
                f"LazyMemmapStorage.loads: the storage saved in {path} has "
                f"max_size={meta['max_size']}, ndim={meta['ndim']}; this one has "
                f"max_size={self.max_size}, ndim={self.ndim}. Nothing was restored; load it "
                f"into a storage of max_size={meta['max_size']} (or LazyMemmapStorage.load)."
            )
        if self._data is not None:
            try:
                self._check_saved(data)
            except (TypeError, ValueError, KeyError) as error:
                raise ValueError(
                    f"LazyMemmapStorage.loads: the storage saved in {path} does not fit this "
                    f"one ({error}). Nothing was restored."
                ) from error
        return data, meta, Path(path)

    def _load_saved(self, saved: Any) -> None:
        if self._checkpointer is not None:
            super()._load_saved(saved)
            return
        data, meta, path = saved
        if (
            self._data is None
            and self.scratch_dir is not None
            and self.scratch_dir.resolve() == Path(path).resolve()
        ):
            self.scratch_dir = Path(path)
            self.ndim = meta["ndim"]
            self.max_size = meta["max_size"]
            self._adopt(data, len_rows=meta["len_rows"])
            self._next_row = meta["next_row"]
            if meta["files"] is not None:  # a dump becomes a scratch dir: its files will change
                self._publish(Path(path))
            self._length = _open_length(path) if (Path(path) / _LENGTH).exists() else None
            return
        if self._data is None:
            self._adopt(self._allocate(data, data.shape[0]), len_rows=0)
        # every row is replaced: until the new length record, the directory holds no storage
        (self.scratch_dir / _META).unlink(missing_ok=True)
        _undo.discard(self.scratch_dir)
        self._journal = None
        self._length = None
        self._copy_in(data)
        self._len_rows = meta["len_rows"]
        self._next_row = meta["next_row"]
        self._written(self._len_rows)

    def _restore(
        self, data: Tensor | TensorDictBase, len_rows: int, next_row: int, rows: int
    ) -> None:
        # A checkpointer's rows replace every item: until the new length record, the
        # scratch directory holds no storage (as in loads).
        if self._data is None:
            self._adopt(self._allocate(data, rows), len_rows=0)
        (self.scratch_dir / _META).unlink(missing_ok=True)
        _undo.discard(self.scratch_dir)
        self._journal = None
        self._length = None
        super()._restore(data, len_rows, next_row, rows)
        self._written(len_rows)

    @classmethod
    def load(cls, path: str | Path) -> LazyMemmapStorage:
        """Reopens the storage kept in ``path`` (a scratch dir or a :meth:`dumps` target).

        The files are used in place: later writes go to ``path``.
        """
        _, meta = _read(path)
        storage = cls(meta["max_size"], scratch_dir=path, ndim=meta["ndim"], existsok=True)
        storage.loads(path)
        return storage

    def __getstate__(self) -> dict[str, Any]:
        # The journal's views are this process's mappings; a copy in another process opens
        # its own on its first overwrite (one process writes a storage at a time).
        return {**self.__dict__, "_journal": None, "_length": None}

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["scratch_dir"] = str(self.scratch_dir) if self.scratch_dir is not None else None
        return state


def _data_files(path: Path) -> list[Path]:
    """The files a dump wrote under ``path`` besides its records (tensordict's memory-mapped
    files and their ``meta.json``)."""
    records = {_META, _LENGTH, _undo.FOLDER}
    return sorted(
        file
        for file in path.iterdir()
        if file.name not in records and not file.name.endswith(".tmp")
    )


def _read(path: str | Path) -> tuple[Tensor | TensorDictBase, dict[str, Any]]:
    path = Path(path)
    meta_file = path / _META
    if not meta_file.exists():
        raise FileNotFoundError(
            f"LazyMemmapStorage.load: {path} holds no storage (no {_META}). Pass a scratch_dir "
            f"that a LazyMemmapStorage wrote to, or a directory given to dumps()."
        )
    try:
        meta = json.loads(meta_file.read_text())
        length_file = meta.get("length_file")
        files = meta.get("files")  # (a dump's; a scratch dir's files change)
        meta = {key: meta[key] for key in ("max_size", "ndim", "len_rows", "next_row", "is_tensor")}
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(
            f"LazyMemmapStorage.load: {meta_file} is damaged ({type(error).__name__}: "
            f"{error}). Nothing was restored."
        ) from error
    if length_file is not None:  # (directories written before the length word: the JSON's)
        word = path / _LENGTH
        raw = word.read_bytes() if word.exists() else b""
        if len(raw) != 8:
            raise ValueError(
                f"LazyMemmapStorage.load: {word} is damaged or missing ({len(raw)} bytes where "
                f"the length word needs 8). Nothing was restored."
            )
        packed = int.from_bytes(raw, "little", signed=True)
        meta["len_rows"], meta["next_row"] = divmod(packed, _HALF)
    meta["files"] = files
    if files is not None:
        check_files("LazyMemmapStorage.load", path, files)
    if meta["is_tensor"]:
        raise NotImplementedError(
            "LazyMemmapStorage.load: reopening a storage of plain tensors is not supported; "
            "store TensorDicts to reload from disk."
        )
    # (tensordict maps a file shorter than its tensor by growing it with zeros: the sizes
    # are taken before, and checked after)
    sizes = {
        file.resolve(): file.stat().st_size
        for file in path.rglob("*.memmap")
        if _undo.FOLDER not in file.parts
    }
    try:
        data = TensorDict.load_memmap(path)
    except Exception as error:  # tensordict raises many types for damaged files
        raise ValueError(
            f"LazyMemmapStorage.load: the memory-mapped files in {path} cannot be read "
            f"({type(error).__name__}: {error}). Nothing was restored."
        ) from error
    for leaf in data.values(include_nested=True, leaves_only=True):
        filename = getattr(leaf, "filename", None)
        expected = leaf.numel() * leaf.element_size()
        if filename is not None and sizes.get(Path(filename).resolve(), expected) < expected:
            raise ValueError(
                f"LazyMemmapStorage.load: {filename} is damaged: it held "
                f"{sizes[Path(filename).resolve()]} bytes where its tensor needs {expected} "
                f"(a truncated copy?). Nothing was restored."
            )
    if data.shape[:1] != (meta["max_size"] // max(math.prod(data.shape[1 : meta["ndim"]]), 1),):
        raise ValueError(
            f"LazyMemmapStorage.load: the files in {path} hold {data.shape[0]} rows, which "
            f"does not match {meta_file} (max_size={meta['max_size']}, ndim={meta['ndim']}). "
            f"Nothing was restored."
        )
    # A writer killed mid-overwrite left the rows it was replacing in the undo journal:
    # they go back first, so that every item read from here is whole.
    _undo.recover(path, data)
    return data, meta
