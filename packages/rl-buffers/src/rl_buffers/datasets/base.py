"""BaseDatasetExperienceReplay: an offline dataset converted once into memory-mapped TED rows
under a local root and served as a read-only TensorDict replay buffer."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tensordict import TensorDict

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

    Subclasses set :attr:`dataset_id` and :attr:`root`, then call :meth:`_open` with the
    buffer's keyword arguments, and implement :meth:`_convert`.

    Attributes:
        metadata: the record's ``"metadata"`` entry (what the source file says about itself).
    """

    dataset_id: str
    root: Path
    metadata: dict[str, Any]

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

    def _open(self, *, writer: Any = None, **kwargs: Any) -> None:
        """Converts the dataset if needed, then builds the buffer over its rows."""
        if not self._is_downloaded():
            self._convert_into_place()
        record = _read_record(self.data_path / MARKER)
        self.metadata = record.get("metadata", {})
        storage = TensorStorage(TensorDict.load_memmap(self.data_path))
        if writer is None:
            writer = ImmutableDatasetWriter(f"{type(self).__name__}({self.dataset_id!r})")
        super().__init__(storage=storage, writer=writer, **kwargs)

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
