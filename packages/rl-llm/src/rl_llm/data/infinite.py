"""create_infinite_iterator: pass after pass over a re-iterable (a DataLoader, a list)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def create_infinite_iterator(iterator: Iterable[T]) -> Iterator[T]:
    """Yields the items of ``iterator``, starting over each time it ends, forever.

    ``iterator`` must be re-iterable (a ``DataLoader``, a list, a ``datasets.Dataset``): a
    one-shot iterator or generator has nothing left for a second pass.

    Raises:
        ValueError: a pass yields nothing (an empty iterable, or a one-shot iterator that is
            used up), instead of looping forever without yielding.

    Examples:
        >>> from itertools import islice
        >>> from rl_llm.data import create_infinite_iterator
        >>> list(islice(create_infinite_iterator([1, 2, 3]), 7))
        [1, 2, 3, 1, 2, 3, 1]
    """
    passes = 0
    while True:
        empty = True
        for item in iterator:
            empty = False
            yield item
        if empty:
            what = (
                "is empty"
                if passes == 0
                else "yielded nothing on a new pass (a one-shot iterator?)"
            )
            raise ValueError(
                f"create_infinite_iterator: the iterable {what}; pass a re-iterable such as a "
                f"DataLoader or a list."
            )
        passes += 1
