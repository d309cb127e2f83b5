"""File manifests: the size and CRC-32 of every file a dump wrote, checked before a load.

A dump lists its data files with their sizes and CRC-32s (zlib's) in the JSON record it
renames into place last (a checkpointer's ``rl_buffers_checkpoint.json``, a storage's
``rl_buffers_files.json``, a buffer's ``buffer.json``); a load checks every listed file
before it reads any, so that a truncated, extended or altered file is refused, by name,
before anything is restored. CRC-32 catches any change confined to 32 consecutive bits and
misses other changes with a chance of one in 2**32: it detects damage, not forgery.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["FILES_RECORD", "check_files", "check_files_record", "describe_files"]

FILES_RECORD = "rl_buffers_files.json"  # a storage's own layout: the manifest of storage.pt
_CHUNK = 1 << 24  # bytes read at a time


def describe_files(folder: Path, paths: Iterable[Path]) -> dict[str, dict[str, int]]:
    """``{path relative to folder: {"bytes": size, "crc32": checksum}}`` of each file in
    ``paths``, folders walked recursively (in name order); paths that do not exist are
    left out."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(file for file in path.rglob("*") if file.is_file()))
        elif path.is_file():
            files.append(path)
    return {
        file.relative_to(folder).as_posix(): {"bytes": file.stat().st_size, "crc32": _crc32(file)}
        for file in files
    }


def check_files(where: str, folder: Path, manifest: Any) -> None:
    """Checks every file of ``manifest`` (as :func:`describe_files` returns it) under
    ``folder``: present, of its recorded size, with its recorded CRC-32.

    Raises:
        FileNotFoundError: a listed file is missing.
        ValueError: the manifest is malformed, or a file's size or CRC-32 differs from it.
    """
    if not isinstance(manifest, dict) or not all(
        isinstance(name, str)
        and isinstance(entry, dict)
        and isinstance(entry.get("bytes"), int)
        and isinstance(entry.get("crc32"), int)
        and not PurePosixPath(name).is_absolute()
        and ".." not in PurePosixPath(name).parts
        for name, entry in manifest.items()
    ):
        raise ValueError(
            f"{where}: the file list of the checkpoint in {folder} is damaged (expected "
            f'{{"relative/path": {{"bytes": int, "crc32": int}}}}). Nothing was restored.'
        )
    for name, entry in manifest.items():
        file = folder / name
        if not file.is_file():
            raise FileNotFoundError(
                f"{where}: {file} is missing; the checkpoint is incomplete. Nothing was restored."
            )
        size = file.stat().st_size
        if size != entry["bytes"]:
            raise ValueError(
                f"{where}: {file} is damaged: expected {entry['bytes']} bytes, got {size} (a "
                f"truncated or overwritten copy?). Nothing was restored; pass an intact "
                f"checkpoint."
            )
        crc = _crc32(file)
        if crc != entry["crc32"]:
            raise ValueError(
                f"{where}: {file} is damaged: expected CRC-32 {entry['crc32']:#010x}, got "
                f"{crc:#010x} (its bytes changed since the dump). Nothing was restored; pass "
                f"an intact checkpoint."
            )


def check_files_record(where: str, folder: Path) -> None:
    """Checks the files listed in ``folder``'s :data:`FILES_RECORD` (see
    :func:`check_files`); a folder without one (a dump of an earlier version) passes.

    Raises:
        FileNotFoundError: a listed file is missing.
        ValueError: the record is damaged, or a file differs from it.
    """
    record = folder / FILES_RECORD
    if not record.exists():
        return
    try:
        manifest = json.loads(record.read_text())["files"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{where}: {record} is damaged ({type(error).__name__}: {error}). Nothing was restored."
        ) from error
    check_files(where, folder, manifest)


def _crc32(file: Path) -> int:
    crc = 0
    with open(file, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return crc
