"""Resumable HTTP downloads of dataset files, checked against a SHA-256 digest.

A download goes to ``<dest>.part`` beside the destination; an interrupted one (a killed
process, a dropped connection) leaves that file, and the next call asks the server for the
rest (an HTTP ``Range`` request) instead of starting over. The file is renamed to ``dest``
only once complete and, when a digest is given, checked; a wrong digest removes it.
"""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["download", "partial_path", "sha256_of"]

_CHUNK = 1 << 16


def partial_path(dest: Path) -> Path:
    """Where the download of ``dest`` is kept until it is complete."""
    return dest.with_name(dest.name + ".part")


def sha256_of(path: Path) -> str:
    """The hex SHA-256 digest of the file ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(
    url: str,
    dest: str | Path,
    *,
    sha256: str | None = None,
    progress: bool = True,
    timeout: float = 30.0,
) -> Path:
    """Downloads ``url`` to ``dest``, resuming a partial download left by an earlier call.

    Args:
        url: an ``http(s)://`` or ``file://`` address.
        dest: the file to write (its folder is created).

    Keyword Args:
        sha256: the expected hex SHA-256 digest of the whole file; None skips the check.
        progress: show a progress bar (tqdm when installed, else lines on stderr).
        timeout: seconds to wait for the server before giving up.

    Returns:
        ``dest``.

    Raises:
        ConnectionError: the server cannot be reached or the transfer broke off (the part
            already received is kept for the next call); the message names the URL.
        ValueError: the file's digest is not ``sha256`` (the file is removed).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = partial_path(dest)
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        if error.code == 416 and have:  # the part already holds the whole file
            response = None
        else:
            raise ConnectionError(
                f"download: {url} answered HTTP {error.code} ({error.reason}). Check the URL, or "
                f"place the file at {dest} yourself."
            ) from error
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ConnectionError(
            f"download: cannot reach {url} ({reason}). Connect to the network, or place the "
            f"file at {dest} yourself (then no download is needed)."
        ) from error
    if response is not None:
        with response:
            resumed = have and getattr(response, "status", 200) == 206
            if not resumed:
                have = 0  # the server sent the whole file: start over
            length = response.headers.get("Content-Length")
            total = have + int(length) if length is not None else None
            _receive(url, response, part, have, total, progress)
    if sha256 is not None:
        got = sha256_of(part)
        if got != sha256.lower():
            part.unlink(missing_ok=True)
            raise ValueError(
                f"download: the file from {url} has SHA-256 {got}, expected {sha256}; it was "
                f"removed. The server may hold another version of it; pass its digest or "
                f"retry."
            )
    os.replace(part, dest)
    return dest


def _receive(url: str, response: Any, part: Path, have: int, total: int | None, show: bool) -> None:
    bar = _progress(url, have, total) if show else None
    got = have
    try:
        with open(part, "ab" if have else "wb") as handle:
            while True:
                try:
                    block = response.read(_CHUNK)
                except OSError as error:
                    raise ConnectionError(
                        f"download: the transfer from {url} broke off after {got} bytes "
                        f"({error}); {part} keeps them and the next call resumes."
                    ) from error
                if not block:
                    break
                handle.write(block)
                got += len(block)
                if bar is not None:
                    bar(len(block))
            handle.flush()
            os.fsync(handle.fileno())
    finally:
        if bar is not None:
            bar(None)
    if total is not None and got < total:
        raise ConnectionError(
            f"download: the transfer from {url} broke off after {got} of {total} bytes; "
            f"{part} keeps them and the next call resumes."
        )


def _progress(url: str, have: int, total: int | None) -> Any:
    """A callable taking each block's size (None: done) that shows the download's progress."""
    try:
        from tqdm import tqdm
    except ImportError:
        state = {"got": have, "shown": -1}

        def line(size: int | None) -> None:
            if size is not None:
                state["got"] += size
            percent = state["got"] * 100 // total if total else None
            if size is None or (percent is not None and percent // 10 > state["shown"]):
                state["shown"] = (percent or 0) // 10
                done = f"{percent}%" if percent is not None else f"{state['got']} bytes"
                print(f"download {url}: {done}", file=sys.stderr)

        return line
    bar = tqdm(total=total, initial=have, unit="B", unit_scale=True, desc=url.rsplit("/", 1)[-1])

    def update(size: int | None) -> None:
        if size is None:
            bar.close()
        else:
            bar.update(size)

    return update
