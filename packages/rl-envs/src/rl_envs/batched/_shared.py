"""ParallelEnv's shared memory: one byte block per buffer, cut into entries and worker rows."""

from __future__ import annotations

import torch

from rl_envs.batched._meta import Path

# Byte alignment of each entry in a shared block (a cache line).
_ALIGN = 64
# Bytes of fresh copies allocated at once by RowCopies (fewer rows for large entries).
_COPIES_BYTES = 1 << 20


class SharedBuffers:
    """The shared-memory buffers of one ParallelEnv: one byte block each, cut into entries.

    Each buffer holds the entries ``paths[name]`` with batch ``[num_workers, *sub_batch]``,
    one after the other (64-byte aligned) in a single shared ``uint8`` block, so that one copy
    reads all of them (see :class:`RowCopies`); ``leaves(name, i)`` gives worker ``i`` its rows.

    Args:
        templates: per buffer, one zero-filled tensor per entry, in the order of ``paths``.
        paths: per buffer, the entry paths.
    """

    def __init__(
        self, templates: dict[str, list[torch.Tensor]], paths: dict[str, list[Path]]
    ) -> None:
        self.paths = paths
        self.blocks: dict[str, torch.Tensor] = {}
        self.layouts: dict[str, list[tuple[int, torch.dtype, torch.Size]]] = {}
        self._leaves: dict[str, list[torch.Tensor]] = {}
        for name, values in templates.items():
            layout, size = [], 0
            for value in values:
                layout.append((size, value.dtype, value.shape))
                nbytes = value.numel() * value.element_size()
                size += -(-nbytes // _ALIGN) * _ALIGN
            block = torch.zeros(max(size, _ALIGN), dtype=torch.uint8).share_memory_()
            leaves = entry_views(block, layout)
            for leaf, value in zip(leaves, values):
                leaf.copy_(value)
            self.blocks[name], self.layouts[name], self._leaves[name] = block, layout, leaves

    def leaves(self, name: str, index: int | None = None) -> list[torch.Tensor]:
        """The entries of buffer ``name`` (batch ``[n, ...]``), or worker ``index``'s rows."""
        leaves = self._leaves[name]
        return list(leaves) if index is None else [leaf[index] for leaf in leaves]


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def entry_views(
    block: torch.Tensor, layout: list[tuple[int, torch.dtype, torch.Size]]
) -> list[torch.Tensor]:
    """Typed views of a ``uint8`` block (or of each row of a 2-d one) at the offsets of ``layout``."""
    lead = tuple(block.shape[:-1])
    views = []
    for offset, dtype, shape in layout:
        nbytes = shape.numel() * _itemsize(dtype)
        raw = block[..., offset : offset + nbytes]
        views.append(raw.view(dtype).view(*lead, *shape))
    return views


class RowCopies:
    """Fresh copies of a shared block, handed out as entry tensors: one numpy copy per call.

    Copies go into rows of a preallocated block (a new one every ``rows`` calls), cut into
    entry views once per block; each row is written once, so the tensors handed out are never
    modified afterwards.

    Args:
        block: the shared ``uint8`` block.
        layout: its entries, as :attr:`SharedBuffers.layouts` gives them.
    """

    def __init__(
        self, block: torch.Tensor, layout: list[tuple[int, torch.dtype, torch.Size]]
    ) -> None:
        self.source = block.numpy()
        self.layout = layout
        self.rows = max(1, min(64, _COPIES_BYTES // max(block.numel(), 1)))
        self.row = self.rows  # no block yet: the first call allocates one

    def _allocate(self) -> None:
        block = torch.empty((self.rows, self.source.shape[0]), dtype=torch.uint8)
        self.targets = list(block.numpy())
        columns = [view.unbind(0) for view in entry_views(block, self.layout)]
        self.entries = list(zip(*columns))
        self.row = 0

    def take(self) -> tuple[torch.Tensor, ...]:
        """A fresh copy of the block, as its entries (row ``self.row - 1``)."""
        i = self.row
        if i == self.rows:
            self._allocate()
            i = 0
        self.row = i + 1
        self.targets[i][...] = self.source
        return self.entries[i]


__all__ = ["RowCopies", "SharedBuffers", "entry_views"]
