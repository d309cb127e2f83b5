"""Storage checkpointers: how ``storage.dumps``/``loads`` lay a tensor storage out on disk.

Set one on a storage (``storage.checkpointer = H5StorageCheckpointer()``), as in TorchRL;
``storage.dumps(path)``, ``storage.loads(path)`` and the buffer's ``dumps``/``loads`` then go
through it. Every checkpointer writes its data first and a small JSON record last (renamed
into place), after removing the old record: a directory whose dump was killed halfway has no
record and is refused by ``loads`` rather than read as old metadata over new data. The record
lists every data file with its size and CRC-32 (``_manifest``); ``loads`` checks them, then
reads and checks everything else before it changes the storage, and restores a
``LazyMemmapStorage`` through its own crash-safe path (length record removed, rows copied,
record written back).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_buffers.storages._files import atomic_write_json
from rl_buffers.storages._manifest import check_files, describe_files

__all__ = [
    "FlatStorageCheckpointer",
    "H5StorageCheckpointer",
    "NestedStorageCheckpointer",
    "StorageCheckpointerBase",
    "TensorStorageCheckpointer",
]

_RECORD = "rl_buffers_checkpoint.json"
_TENSOR = "_tensor"  # the key a plain-tensor storage is saved under
_DONE_KEYS = ("done", "terminated", "truncated")
_REWARD_KEYS = ("reward",)


class StorageCheckpointerBase:
    """Writes a storage's items under a directory and reads them back.

    Subclasses implement :meth:`_write` (the data files) and :meth:`_read_files` (their
    contents, as the rows ``[0, len_rows)`` of the storage). The base writes and checks the
    record (``rl_buffers_checkpoint.json``: the checkpointer, ``len_rows``, ``next_row``,
    ``rows``, ``max_size``, ``ndim``, whether the storage held a plain tensor) and restores.
    """

    def accepts(self, storage: Any) -> bool:
        """Whether this checkpointer saves ``storage`` (here: a tensor storage)."""
        return hasattr(storage, "_restore")

    def dumps(self, storage: Any, path: str | Path) -> None:
        """Saves ``storage``'s items under the directory ``path``."""
        path = Path(path)
        where = f"{type(self).__name__}.dumps"
        data = getattr(storage, "_data", None)
        if data is None:
            raise RuntimeError(f"{where}: the storage holds no data yet; nothing to save.")
        if not storage.num_rows:
            raise RuntimeError(f"{where}: the storage holds no items; nothing to save.")
        path.mkdir(parents=True, exist_ok=True)
        (path / _RECORD).unlink(missing_ok=True)  # until the new record: no checkpoint here
        len_rows = storage.num_rows
        rows = data[:len_rows]
        is_tensor = isinstance(rows, Tensor)
        if is_tensor:
            rows = TensorDict({_TENSOR: rows}, batch_size=rows.shape[:1])
        self._write(rows.cpu(), path)
        record = {
            "files": describe_files(path, self._data_paths(path)),
            "checkpointer": type(self).__name__,
            "len_rows": len_rows,
            "next_row": storage.next_row,
            "rows": data.shape[0],
            "max_size": storage.max_size,
            "ndim": storage.ndim,
            "is_tensor": is_tensor,
        }
        atomic_write_json(record, path / _RECORD)

    def loads(self, storage: Any, path: str | Path) -> None:
        """Restores what :meth:`dumps` saved under ``path`` into ``storage``."""
        self.restore(storage, self.read(storage, path))

    def read(self, storage: Any, path: str | Path) -> tuple[dict[str, Any], Any]:
        """Reads and checks a checkpoint, changing nothing; :meth:`restore` applies it.

        Raises:
            FileNotFoundError: ``path`` holds no complete checkpoint.
            ValueError: the record or the data is damaged, or was written by another
                checkpointer or for another storage layout.
        """
        path = Path(path)
        where = f"{type(self).__name__}.loads"
        record_file = path / _RECORD
        if not record_file.exists():
            raise FileNotFoundError(
                f"{where}: {path} holds no complete checkpoint (no {_RECORD}; a dump killed "
                f"before its end leaves none). Pass a directory written by dumps()."
            )
        try:
            record = json.loads(record_file.read_text())
            keys = ("checkpointer", "len_rows", "next_row", "rows", "max_size", "ndim")
            # (a checkpoint of an earlier version lists no files)
            files = record.get("files")
            record = {key: record[key] for key in (*keys, "is_tensor")}
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(
                f"{where}: {record_file} is damaged ({type(error).__name__}: {error}). "
                f"Nothing was restored."
            ) from error
        if record["checkpointer"] != type(self).__name__:
            raise ValueError(
                f"{where}: {path} was written by {record['checkpointer']}; set "
                f"storage.checkpointer = {record['checkpointer']}() to read it."
            )
        if record["ndim"] != storage.ndim or record["max_size"] != storage.max_size:
            raise ValueError(
                f"{where}: the checkpoint holds a storage of max_size={record['max_size']}, "
                f"ndim={record['ndim']}; this one has max_size={storage.max_size}, "
                f"ndim={storage.ndim}. Nothing was restored."
            )
        if files is not None:
            check_files(where, path, files)
        try:
            rows = self._read_files(path, record["len_rows"])
        except FileNotFoundError:
            raise
        except Exception as error:  # h5py, tensordict and torch raise many types
            raise ValueError(
                f"{where}: the data files in {path} cannot be read ({type(error).__name__}: "
                f"{error}). Nothing was restored."
            ) from error
        if rows.batch_size[:1] != (record["len_rows"],):
            raise ValueError(
                f"{where}: the data files in {path} hold {rows.batch_size[0]} rows, the record "
                f"{record['len_rows']}. Nothing was restored."
            )
        data = rows[_TENSOR] if record["is_tensor"] else rows
        storage._check_restorable(where, data, record["rows"])
        return record, data

    def restore(self, storage: Any, saved: tuple[dict[str, Any], Any]) -> None:
        """Puts what :meth:`read` returned into ``storage``."""
        record, data = saved
        storage._restore(data, record["len_rows"], record["next_row"], record["rows"])

    def _write(self, rows: TensorDictBase, path: Path) -> None:
        raise NotImplementedError

    def _data_paths(self, path: Path) -> list[Path]:
        """The files and folders :meth:`_write` writes under ``path`` (those that do not
        exist are skipped)."""
        return [path / name for name in _PARTS]

    def _read_files(self, path: Path, len_rows: int) -> TensorDictBase:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class TensorStorageCheckpointer(StorageCheckpointerBase):
    """Saves a tensor storage's items as tensordict memory-mapped files (``path/data/``).

    The default layout of TorchRL's tensor storages. Rows ``[0, len)`` are saved, with the
    writer position (``next_row``) in the record.

    Examples:
        >>> import tempfile, torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, TensorStorageCheckpointer
        >>> storage = LazyTensorStorage(10)
        >>> storage.set(torch.arange(3), TensorDict({"obs": torch.arange(3.0)}, [3]))
        >>> storage.checkpointer = TensorStorageCheckpointer()
        >>> folder = tempfile.mkdtemp()
        >>> storage.dumps(folder)
        >>> other = LazyTensorStorage(10)
        >>> other.checkpointer = TensorStorageCheckpointer()
        >>> other.loads(folder)
        >>> other[:]["obs"].tolist()
        [0.0, 1.0, 2.0]
    """

    def _write(self, rows: TensorDictBase, path: Path) -> None:
        rows.memmap(prefix=path / "data", copy_existing=True, existsok=True)

    def _read_files(self, path: Path, len_rows: int) -> TensorDictBase:
        return _load_memmap(path / "data")


class FlatStorageCheckpointer(StorageCheckpointerBase):
    """Saves a TED storage compactly: ``("next", key)`` rows that repeat the next row's
    ``key`` are dropped.

    In TorchRL's TED format an observation appears twice: at the root of step ``t + 1`` and
    under ``"next"`` of step ``t``. For every entry ``("next", key)`` whose ``key`` is also
    at the root (and not a done or reward key), the row of step ``t`` is kept only where it
    differs from the root row ``t + 1`` (episode ends, the newest item, the storage's
    wrap-around); a mask records which rows were kept. ``loads`` rebuilds the dropped rows
    from the root rows, so the round trip is exact whatever the episodes look like. Files:
    ``path/data/`` (everything but the compacted entries), ``path/next_kept/`` (their kept
    rows), ``path/kept.memmap``-style mask, all tensordict memory-mapped files.

    Args:
        done_keys: leaf names never compacted (their ``"next"`` rows are always stored).
            Defaults to ``("done", "terminated", "truncated")``.
        reward_keys: likewise; defaults to ``("reward",)``.

    Raises:
        TypeError: (at ``dumps``) the storage holds plain tensors, not TensorDicts.
    """

    def __init__(
        self, done_keys: Sequence[str] | None = None, reward_keys: Sequence[str] | None = None
    ) -> None:
        self.done_keys = tuple(_DONE_KEYS if done_keys is None else done_keys)
        self.reward_keys = tuple(_REWARD_KEYS if reward_keys is None else reward_keys)

    def _compact(self, rows: TensorDictBase) -> dict[str, TensorDictBase]:
        if _TENSOR in rows.keys():
            raise TypeError(
                f"{type(self).__name__}.dumps: expected a storage of TensorDicts in the TED "
                f"format, got plain tensors. Use TensorStorageCheckpointer."
            )
        return compact_ted(rows, self.done_keys + self.reward_keys)

    def _write(self, rows: TensorDictBase, path: Path) -> None:
        for name, part in self._compact(rows).items():
            part.memmap(prefix=path / name, copy_existing=True, existsok=True)

    def _read_files(self, path: Path, len_rows: int) -> TensorDictBase:
        parts = {name: _load_memmap(path / name) for name in _PARTS}
        return expand_ted(parts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(done_keys={self.done_keys}, reward_keys={self.reward_keys})"


class NestedStorageCheckpointer(FlatStorageCheckpointer):
    """Saves a TED storage compacted as :class:`FlatStorageCheckpointer`, one nested tensor
    per entry with one component per trajectory.

    The compacted rows are split into trajectories after each row whose ``("next", key)``
    entries were kept (an episode end, the newest item, a break in the data); every entry is
    saved as a memory-mapped nested tensor ``[trajectories, (steps), ...]`` under
    ``path/data/``, the kept ``"next"`` rows under ``path/next_kept/``. ``loads`` joins the
    trajectories back and rebuilds the dropped rows: the round trip is exact.

    Args:
        done_keys, reward_keys: as :class:`FlatStorageCheckpointer`.
    """

    def _write(self, rows: TensorDictBase, path: Path) -> None:
        parts = self._compact(rows)
        kept = parts["kept"]["kept"]
        lengths = torch.diff(kept.nonzero().squeeze(-1), prepend=torch.tensor([-1])).tolist()
        compact = parts["data"]
        nested = TensorDict(batch_size=[len(lengths)])
        for key, value in compact.items(include_nested=True, leaves_only=True):
            pieces = list(torch.split(value, lengths))
            with warnings.catch_warnings():  # (torch calls strided nested tensors a prototype;
                # tensordict memory-maps that layout)
                warnings.filterwarnings("ignore", "The PyTorch API of nested tensors")
                nested.set(key, torch.nested.nested_tensor(pieces, layout=torch.strided))
        nested.memmap(prefix=path / "data", copy_existing=True, existsok=True)
        parts["next_kept"].memmap(prefix=path / "next_kept", copy_existing=True, existsok=True)

    def _read_files(self, path: Path, len_rows: int) -> TensorDictBase:
        nested = _load_memmap(path / "data")
        lengths = None
        flat = TensorDict(batch_size=[len_rows])
        for key, value in nested.items(include_nested=True, leaves_only=True):
            pieces = value.unbind(0)
            lengths = [piece.shape[0] for piece in pieces]
            flat.set(key, torch.cat([piece.clone() for piece in pieces]))
        if lengths is None:  # (no root entry: the trajectories come from next_kept's rows)
            raise ValueError("the nested data holds no entry")
        kept = torch.zeros(len_rows, dtype=torch.bool)
        kept[torch.tensor(lengths).cumsum(0) - 1] = True
        next_kept = _load_memmap(path / "next_kept")
        return expand_ted(
            {"data": flat, "next_kept": next_kept, "kept": TensorDict({"kept": kept}, [len_rows])}
        )


class H5StorageCheckpointer(FlatStorageCheckpointer):
    """Saves a storage in one HDF5 file (h5py), compacted as :class:`FlatStorageCheckpointer`.

    The file is written under a temporary name, flushed to disk and renamed to
    ``checkpoint_file``; the record follows. Plain-tensor storages are saved uncompacted.

    Args:
        checkpoint_file: the file name inside the directory. Defaults to ``"checkpoint.h5"``.
        done_keys, reward_keys: as :class:`FlatStorageCheckpointer`.
        h5_kwargs: keyword arguments of ``h5py``'s ``create_dataset`` (``compression="gzip"``,
            ``compression_opts=4``...).

    Raises:
        ImportError: (at ``dumps``/``loads``) h5py is not installed.
    """

    def __init__(
        self,
        *,
        checkpoint_file: str = "checkpoint.h5",
        done_keys: Sequence[str] | None = None,
        reward_keys: Sequence[str] | None = None,
        h5_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(done_keys, reward_keys)
        self.checkpoint_file = checkpoint_file
        self.h5_kwargs = dict(h5_kwargs or {})

    def _write(self, rows: TensorDictBase, path: Path) -> None:
        h5py = _import_h5py()
        parts = {"data": rows} if _TENSOR in rows.keys() else self._compact(rows)
        file = path / self.checkpoint_file
        tmp = file.with_name(file.name + ".tmp")
        with h5py.File(tmp, "w") as handle:
            for name, part in parts.items():
                group = handle.create_group(name)
                group.attrs["batch_size"] = list(part.batch_size)
                for key, value in part.items(include_nested=True, leaves_only=True):
                    key = key if isinstance(key, tuple) else (key,)
                    array = value.cpu()
                    dataset = group.create_dataset(
                        "/".join(key), data=array.numpy(), **self.h5_kwargs
                    )
                    dataset.attrs["dtype"] = str(array.dtype).removeprefix("torch.")
            handle.flush()
        with open(tmp, "rb+") as raw:
            os.fsync(raw.fileno())
        os.replace(tmp, file)

    def _data_paths(self, path: Path) -> list[Path]:
        return [path / self.checkpoint_file]

    def _read_files(self, path: Path, len_rows: int) -> TensorDictBase:
        h5py = _import_h5py()
        file = path / self.checkpoint_file
        if not file.exists():
            raise FileNotFoundError(f"{type(self).__name__}.loads: {file} is missing.")
        parts: dict[str, TensorDictBase] = {}
        with h5py.File(file, "r") as handle:
            for name, group in handle.items():
                part = TensorDict(batch_size=list(group.attrs["batch_size"]))

                def visit(key: str, item: Any, part: TensorDictBase = part) -> None:
                    if isinstance(item, h5py.Dataset):
                        dtype = getattr(torch, item.attrs["dtype"])
                        part.set(tuple(key.split("/")), torch.from_numpy(item[()]).to(dtype))

                group.visititems(visit)
                parts[name] = part
        return parts["data"] if set(parts) == {"data"} else expand_ted(parts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(checkpoint_file={self.checkpoint_file!r})"


def _load_memmap(folder: Path) -> TensorDictBase:
    """A copy of the memory-mapped TensorDict in ``folder`` (a later dump to the same path
    may replace its files). A file shorter than its tensor is refused: tensordict would map
    it grown with zeros (the only check of a checkpoint without a file list)."""
    sizes = {file.resolve(): file.stat().st_size for file in folder.rglob("*.memmap")}
    rows = TensorDict.load_memmap(folder)
    for leaf in rows.values(include_nested=True, leaves_only=True):
        filename = getattr(leaf, "filename", None)
        if filename is None:
            continue
        expected = leaf.numel() * leaf.element_size()
        if sizes.get(Path(filename).resolve(), expected) < expected:
            raise ValueError(f"{filename} is truncated ({expected} bytes expected)")
    return rows.clone()


def _import_h5py() -> Any:
    try:
        import h5py
    except ImportError as err:
        raise ImportError(
            'H5StorageCheckpointer needs h5py: pip install "rl-buffers[h5py]"'
        ) from err
    return h5py


_PARTS = ("data", "next_kept", "kept")


def compact_ted(rows: TensorDictBase, never: Sequence[str]) -> dict[str, TensorDictBase]:
    """Splits TED rows into the rows without redundant ``("next", key)`` entries, the kept
    rows of those entries and the mask of kept rows (see :class:`FlatStorageCheckpointer`)."""
    n = rows.batch_size[0]
    nxt = rows.get("next", None)
    keys = []
    if isinstance(nxt, TensorDictBase):
        root = set(rows.exclude("next").keys(include_nested=True, leaves_only=True))
        for key in nxt.keys(include_nested=True, leaves_only=True):
            leaf = key[-1] if isinstance(key, tuple) else key
            if key in root and leaf not in never:
                keys.append(key)
    kept = torch.ones(n, dtype=torch.bool)
    if keys and n > 1:
        same = torch.ones(n - 1, dtype=torch.bool)
        for key in keys:
            a, b = nxt.get(key)[:-1], rows.get(key)[1:]
            same &= (a == b).reshape(n - 1, -1).all(-1)
        kept[:-1] = ~same
    compact = rows.exclude(*[("next", *(k if isinstance(k, tuple) else (k,))) for k in keys])
    next_kept = TensorDict(
        {("next", *(k if isinstance(k, tuple) else (k,))): nxt.get(k)[kept] for k in keys},
        batch_size=[int(kept.sum())],
    )
    return {
        "data": compact,
        "next_kept": next_kept,
        "kept": TensorDict({"kept": kept}, batch_size=[n]),
    }


def expand_ted(parts: dict[str, TensorDictBase]) -> TensorDictBase:
    """The inverse of :func:`compact_ted`."""
    rows, next_kept, kept = parts["data"], parts["next_kept"], parts["kept"]["kept"]
    for key, value in next_kept.items(include_nested=True, leaves_only=True):
        root_key = key[1:] if len(key) > 2 else key[1]
        full = torch.empty((kept.shape[0], *value.shape[1:]), dtype=value.dtype)
        full[kept] = value
        rebuilt = ~kept
        full[rebuilt] = rows.get(root_key)[1:][rebuilt[:-1]]
        rows.set(key, full)
    return rows
