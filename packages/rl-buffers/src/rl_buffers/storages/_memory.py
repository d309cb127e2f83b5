"""Large CPU allocations on transparent huge pages, where Linux grants them on request.

A replay buffer reads its items at random rows: with 4 KB pages, a batch touches about as
many pages as rows, and every page the TLB does not hold costs a page walk. On machines
whose transparent huge pages are in ``madvise`` mode (``/sys/kernel/mm/transparent_hugepage/
enabled``), memory is backed by 2 MB pages only where the process asks with
``madvise(MADV_HUGEPAGE)``, before the pages are first touched. :func:`zeros` asks for the
2 MB-aligned part of a large tensor, then fills it with zeros. Nothing else changes: the
tensor is what ``torch.zeros`` gives. Elsewhere (other systems, huge pages off or granted to
every allocation already) the request is skipped or has no effect.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

import torch

HUGE_PAGE = 2 << 20
_MADV_HUGEPAGE = 14  # Linux's value (asm-generic/mman-common.h)


def _load_madvise() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    madvise.restype = ctypes.c_int
    return madvise


_madvise = _load_madvise()


def huge_page_span(start: int, nbytes: int) -> tuple[int, int] | None:
    """The 2 MB-aligned ``(address, length)`` inside ``[start, start + nbytes)``, or None when
    it holds fewer than two huge pages (too small to be worth a request)."""
    first = -(-start // HUGE_PAGE) * HUGE_PAGE
    last = (start + nbytes) // HUGE_PAGE * HUGE_PAGE
    if last - first < 2 * HUGE_PAGE:
        return None
    return first, last - first


def zeros(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """``torch.zeros(shape, dtype=dtype)`` on the CPU, its aligned part on huge pages where
    the system grants them on request."""
    tensor = torch.empty(shape, dtype=dtype, device="cpu")
    span = huge_page_span(tensor.data_ptr(), tensor.nbytes) if _madvise is not None else None
    if span is not None:
        _madvise(span[0], span[1], _MADV_HUGEPAGE)  # a hint: its result changes nothing here
    return tensor.zero_()
