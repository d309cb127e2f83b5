"""Rows read part by part (an episode file, an archive member) into one memory-mapped
TensorDict, holding one part in memory at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from tensordict import TensorDict

__all__ = ["write_parts"]


def write_parts(
    folder: Path, parts: Callable[[], Iterator[tuple[str, TensorDict]]], where: str
) -> int:
    """Writes the rows of ``parts()`` (pairs of a name for messages, such as a file, and its
    rows) (called twice: once to count the rows, once to copy
    them) as memory-mapped files into ``folder``; returns the number of rows.

    Every part must have the same keys, dtypes and per-row shapes as the first non-empty one.

    Raises:
        ValueError: no part has a row, or a part's entries differ from the first's.
    """
    total, first = 0, None
    for _, part in parts():
        total += part.shape[0]
        if first is None and part.shape[0]:
            first = part[:1].clone()
    if first is None:
        raise ValueError(f"{where} holds no transition.")
    data = first.expand(total).memmap_like(prefix=folder, existsok=True)
    start = 0
    for name, part in parts():
        if not part.shape[0]:
            continue
        keys = set(part.keys(include_nested=True, leaves_only=True))
        expected = set(first.keys(include_nested=True, leaves_only=True))
        if keys != expected:
            raise ValueError(
                f"{where}: {name} has the entries {sorted(map(str, keys))}, expected "
                f"{sorted(map(str, expected))} (as the first part's)."
            )
        try:
            data[start : start + part.shape[0]] = part
        except (RuntimeError, ValueError) as error:
            raise ValueError(
                f"{where}: {name}'s entries differ in shape or dtype from the first part's "
                f"({error})."
            ) from error
        start += part.shape[0]
    return total
