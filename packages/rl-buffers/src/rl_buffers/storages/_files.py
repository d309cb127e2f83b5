"""Checkpoint files: whole-or-nothing writes, and reads that name the file they refuse.

The lowest module of ``rl_buffers.storages``: the storages, the checkpointers, the undo
journal and the replay buffers write through it, and it imports none of them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

__all__ = ["atomic_save", "atomic_write_json", "load_file"]


def load_file(where: str, file: Path) -> Any:
    """``torch.load(file)``, with an error naming the file when it is missing or damaged.

    Raises:
        FileNotFoundError: ``file`` does not exist.
        ValueError: ``file`` cannot be read back (truncated, overwritten, not a torch file).
    """
    if not file.exists():
        raise FileNotFoundError(
            f"{where}: {file} is missing; the checkpoint is incomplete. Nothing was restored."
        )
    try:
        return torch.load(file, weights_only=False)
    except Exception as error:  # torch.load raises many types for a damaged file
        raise ValueError(
            f"{where}: {file} is damaged or not a file that dumps() wrote "
            f"({type(error).__name__}: {error}). Nothing was restored; pass an intact "
            f"checkpoint."
        ) from error


def atomic_save(obj: Any, file: Path) -> None:
    """``torch.save`` to a temporary file, then an atomic rename over ``file``."""
    tmp = file.with_name(file.name + ".tmp")
    with open(tmp, "wb") as handle:
        torch.save(obj, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, file)


def atomic_write_json(obj: Any, file: Path) -> None:
    """Writes JSON to a temporary file, then renames it over ``file`` (readers never see half)."""
    tmp = file.with_name(file.name + ".tmp")
    with open(tmp, "w") as handle:
        json.dump(obj, handle)
    os.replace(tmp, file)
