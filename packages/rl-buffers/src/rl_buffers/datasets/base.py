"""BaseDatasetExperienceReplay: an offline dataset converted once into memory-mapped TED rows
under a local root and served as a read-only TensorDict replay buffer."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tensordict import TensorDict

from rl_buffers.datasets._download import download
from rl_buffers.replay_buffers.tensordict_buffer import TensorDictReplayBuffer
from rl_buffers.storages._files import atomic_write_json
from rl_buffers.storages.tensor_storage import TensorStorage
from rl_buffers.writers.immutable import ImmutableDatasetWriter

__all__ = ["BaseDatasetExperienceReplay"]

MARKER = "rl_buffers_dataset.json"


class BaseDatasetExperienceReplay(TensorDictReplayBuffer):
    """The base of the offline datasets: converted once, then memory-mapped from ``root``.

    A dataset lives in ``root/<dataset_id>/`` as tensordict memory-mapped files (so a dataset
    larger than RAM is sampled from disk) with a record, ``rl_buffers_dataset.json``, written
    last. The first use converts it: :meth:`_convert` writes the rows into a fresh
    temporary folder beside it, which is renamed into place once complete; a conversion that
    fails (a truncated file, another format) or is killed leaves no ``root/<dataset_id>``, so
    a later use never reads half-written rows. The buffer is read-only (an
    :class:`ImmutableDatasetWriter` naming the dataset).

    Subclasses call :meth:`_locate` (:attr:`dataset_id`, :attr:`root`, :attr:`download`),
    set what their :meth:`_convert` reads, then call :meth:`_open` with the buffer's
    arguments, and implement :meth:`_convert`, getting their source files through
    :meth:`_source_file` (or :meth:`_refuse_download` where a folder is checked).

    Attributes:
        metadata: the record's ``"metadata"`` entry (what the source file says about itself).
    """

    dataset_id: str
    root: Path
    download: bool
    metadata: dict[str, Any]

    def _locate(self, dataset_id: str, root: str | Path | None, cache: str, download: bool) -> None:
        """Sets :attr:`dataset_id`, :attr:`root` (``~/.cache/rl_buffers/<cache>`` when None)
        and :attr:`download` (whether missing source files are downloaded)."""
        self.dataset_id = dataset_id
        self.root = Path(root) if root is not None else Path.home() / ".cache/rl_buffers" / cache
        self.download = download

    def _refuse_download(self, path: Path, what: str, state: str = "does not exist") -> None:
        """Raises the error of a missing source unless :attr:`download` allows fetching it:
        ``"<Reader>: <path> <state> and download=False. Put <what> there, or pass
        download=True."``"""
        if not self.download:
            raise FileNotFoundError(
                f"{type(self).__name__}: {path} {state} and download=False. Put {what} there, "
                f"or pass download=True."
            )

    def _source_file(
        self, path: Path, url: str | None, what: str, *, sha256: str | None = None
    ) -> Path:
        """``path``; when it is missing, downloaded from ``url`` (resuming a ``.part`` left by
        an interrupted download, checked against ``sha256`` when given).

        Raises:
            FileNotFoundError: ``path`` is missing and :attr:`download` is False, or ``url``
                is None; the message names ``path`` and says to put ``what`` there.
            ConnectionError: the download failed (the message names ``url``).
        """
        if path.exists():
            return path
        self._refuse_download(path, what)
        if url is None:
            raise FileNotFoundError(
                f"{type(self).__name__}: {path} does not exist and there is no url= to download "
                f"it from. Put {what} there, or pass url=."
            )
        return download(url, path, sha256=sha256)

    @property
    def data_path(self) -> Path:
        """The folder of the converted rows, ``root/<dataset_id>``."""
        return self.root / self.dataset_id

    @property
    def data_path_root(self) -> Path:
        """The folder of every converted dataset of this kind."""
        return self.root

    def _is_downloaded(self) -> bool:
        """Whether the converted rows are in place (their record exists)."""
        return (self.data_path / MARKER).exists()

    def _convert(self, folder: Path) -> dict[str, Any]:
        """Writes the dataset's TED rows as memory-mapped files into the empty ``folder``,
        fetching the source as needed, and returns its metadata (JSON-serializable)."""
        raise NotImplementedError

    def _open(
        self,
        batch_size: int | None,
        sampler: Any,
        writer: Any,
        collate_fn: Any,
        transform: Any,
        prefetch: int | None,
        pin_memory: bool,
        /,
    ) -> None:
        """Converts the dataset if needed, then builds the buffer over its rows with the
        :class:`ReplayBuffer` arguments every reader takes (in the order of their signatures;
        the writer defaults to an :class:`ImmutableDatasetWriter` naming the dataset)."""
        if not self._is_downloaded():
            self._convert_into_place()
        record = _read_record(self.data_path / MARKER)
        self.metadata = record.get("metadata", {})
        storage = TensorStorage(TensorDict.load_memmap(self.data_path))
        if writer is None:
            writer = ImmutableDatasetWriter(f"{type(self).__name__}({self.dataset_id!r})")
        super().__init__(
            storage=storage,
            sampler=sampler,
            writer=writer,
            collate_fn=collate_fn,
            batch_size=batch_size,
            transform=transform,
            prefetch=prefetch,
            pin_memory=pin_memory,
        )

    def _convert_into_place(self) -> None:
        final = self.data_path
        created = [p for p in (final.parent, *final.parent.parents) if not p.exists()]
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
        done = False
        try:
            metadata = self._convert(tmp)
            atomic_write_json(
                {"dataset_id": self.dataset_id, "kind": type(self).__name__, "metadata": metadata},
                tmp / MARKER,
            )
            if final.exists():  # (a folder without a record: a copy of no use)
                shutil.rmtree(final)
            tmp.rename(final)
            done = True
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
            if not done:  # folders this call created, left empty by a failure, go too
                for folder in created:
                    _remove_empty(folder)

    def delete(self) -> None:
        """Removes the converted rows (``root/<dataset_id>``); the buffer is unusable after."""
        if self.data_path.exists():
            shutil.rmtree(self.data_path)


def _remove_empty(folder: Path) -> None:
    """Removes ``folder`` and its subfolders, bottom-up, where they hold no file (a partial
    download's ``.part`` file, kept for resuming, keeps its folders)."""
    if not folder.is_dir():
        return
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        if not any(sub.iterdir()):
            sub.rmdir()
    if not any(folder.iterdir()):
        folder.rmdir()


def _read_record(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ValueError(
            f"{path} is damaged ({error}); remove {path.parent} to convert the dataset again."
        ) from error
