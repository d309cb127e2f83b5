"""The undo journal of a memory-mapped storage: an overwrite is whole-new or whole-old.

A :class:`~rl_buffers.LazyMemmapStorage` writes its items straight into shared file
mappings, one leaf after the other. A process killed in the middle of overwriting rows would
leave items whose first entries are new and whose last are old. Before rows that hold items
are overwritten, their old contents are copied into the journal (files beside the data, in
``rl_buffers_undo/``) and the journal's row count is set; once the write and the storage's
length record are done, the count goes back to 0. Reopening a directory whose count is not
0 copies the saved rows back first: every item is then as it was before the interrupted
write.

The journal's files are mapped like the data (``MAP_SHARED``): what a killed process wrote
to them is in the page cache, in the order it wrote it. The order that matters: the saved
rows before the count, the count before the first data write, the length record before the
count is cleared. A machine that loses power may lose page-cache writes in any order; that
case is not covered (no ``fsync``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from tensordict import MemoryMappedTensor, TensorDictBase
from torch import Tensor

from rl_buffers.storages._files import atomic_write_json

FOLDER = "rl_buffers_undo"
_LAYOUT = "layout.json"

Key = tuple[str, ...]


class UndoJournal:
    """Saved old rows of a storage's leaves, and how many of them are pending.

    Args:
        folder: the storage's directory (the journal lives in ``folder/rl_buffers_undo``).
        leaves: the storage's ``(key, tensor)`` leaves, rows along dim 0.
        capacity: how many rows the journal holds.
    """

    def __init__(self, folder: Path, leaves: list[tuple[Key, Tensor]], capacity: int) -> None:
        where = Path(folder) / FOLDER
        shutil.rmtree(where, ignore_errors=True)  # (its count is 0: nothing pending)
        where.mkdir(parents=True)
        self.capacity = capacity
        # plain views of the mapped files (no subclass dispatch on each write)
        self.rows = MemoryMappedTensor.empty(
            (capacity,), dtype=torch.long, filename=str(where / "rows.memmap")
        ).as_subclass(Tensor)
        self.saved = [
            MemoryMappedTensor.empty(
                (capacity, *leaf.shape[1:]),
                dtype=leaf.dtype,
                filename=str(where / f"leaf_{number}.memmap"),
            ).as_subclass(Tensor)
            for number, (_, leaf) in enumerate(leaves)
        ]
        self.count = MemoryMappedTensor.zeros(
            (1,), dtype=torch.long, filename=str(where / "count.memmap")
        ).as_subclass(Tensor)
        layout = {
            "capacity": capacity,
            "keys": [list(key) for key, _ in leaves],
            "shapes": [list(leaf.shape[1:]) for _, leaf in leaves],
            "dtypes": [str(leaf.dtype).removeprefix("torch.") for _, leaf in leaves],
        }
        atomic_write_json(layout, where / _LAYOUT)
        self.pending = False

    def save(self, rows: Tensor, leaves: list[tuple[Key, Tensor]]) -> None:
        """Copies rows ``rows`` of ``leaves`` into the journal, then marks them pending."""
        n = rows.numel()
        self.rows[:n] = rows
        for saved, (_, leaf) in zip(self.saved, leaves):
            torch.index_select(leaf, 0, rows, out=saved[:n])
        self.count.fill_(n)
        self.pending = True

    def clear(self) -> None:
        """Marks the saved rows as no longer needed (the write they guard is complete)."""
        if self.pending:
            self.count.fill_(0)
            self.pending = False


def recover(folder: Path, data: TensorDictBase) -> int:
    """Copies the rows of a pending journal in ``folder`` back into ``data`` (the storage's
    memory-mapped TensorDict, reopened from ``folder``); returns how many rows it restored
    (0 if no write was interrupted)."""
    where = Path(folder) / FOLDER
    count_file = where / "count.memmap"
    if not count_file.exists():
        return 0
    count = MemoryMappedTensor.from_filename(str(count_file), dtype=torch.long, shape=(1,))
    n = int(count[0])
    if n == 0:
        return 0
    layout = json.loads((where / _LAYOUT).read_text())
    rows = MemoryMappedTensor.from_filename(
        str(where / "rows.memmap"), dtype=torch.long, shape=(layout["capacity"],)
    )[:n]
    for number, (key, shape, dtype) in enumerate(
        zip(layout["keys"], layout["shapes"], layout["dtypes"])
    ):
        saved = MemoryMappedTensor.from_filename(
            str(where / f"leaf_{number}.memmap"),
            dtype=getattr(torch, dtype),
            shape=(layout["capacity"], *shape),
        )
        leaf = data if not key else data.get(tuple(key))
        leaf.index_copy_(0, rows, saved[:n])
    count.fill_(0)
    return n


def discard(folder: Path) -> None:
    """Removes the journal in ``folder`` (before the data there is replaced wholesale)."""
    shutil.rmtree(Path(folder) / FOLDER, ignore_errors=True)
