"""The batch writer: fills a preallocated ``[*batch, T]`` TensorDict, a chunk of steps at a time."""

from __future__ import annotations

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from rl_core.fast_td import entries, get_leaf, is_plain, leaf_paths

# Steps kept before they are stacked into the buffer (one ``torch.stack(..., out=...)`` per
# entry and chunk instead of one copy per entry and step).
CHUNK = 32
# Leaves of at most this many elements per step are stacked into time-major blocks first.
MAX_BLOCK_NUMEL = 4096


def _levels(td: TensorDict) -> list[tuple[tuple[str, ...], int]]:
    """``(path, number of entries)`` of every level of a plain nested TensorDict."""
    sizes: list[tuple[tuple[str, ...], int]] = []

    def visit(node: TensorDict, prefix: tuple[str, ...]) -> None:
        sizes.append((prefix, len(entries(node))))
        for name, value in entries(node).items():
            if type(value) is TensorDict:
                visit(value, (*prefix, name))

    visit(td, ())
    return sizes


class BatchWriter:
    """Writes the transitions of one batch into a ``[*batch, T]`` TensorDict allocated once.

    The buffer is shaped from the first transition it sees and reused for every batch. Each
    ``append`` keeps a reference to the transition (the collector hands over fresh TensorDicts:
    ``step_and_maybe_reset`` builds a new root every step); every ``CHUNK`` steps the kept
    transitions are stacked, one op per entry, into time-major blocks (``[T, *batch, ...]``,
    a contiguous write) that are copied into the buffer once per batch (leaves of more than
    ``MAX_BLOCK_NUMEL`` elements per step, and envs without batch dims, are stacked into the
    buffer directly). A transition whose structure
    differs from the first (an entry more or less, another shape, a non-tensor entry) makes
    the batch a stack of its transitions instead, so no entry is lost.

    Args:
        steps: ``T``, the steps per batch.
        device: where the buffer lives; ``None`` keeps the transitions' device.
    """

    def __init__(self, steps: int, *, device: torch.device | None = None) -> None:
        self.steps = steps
        self.device = device
        self.buffer: TensorDictBase | None = None
        self.leaves: list[tuple[str, ...]] = []
        self.root_size = 0
        self.level_links: list[tuple[int, str, int]] = []
        self.slots: list[tuple[int, str]] = []
        self.targets: list[torch.Tensor] = []
        self.pending: list[TensorDictBase] = []
        self.written = 0
        self.fallback: list[TensorDictBase] | None = None

    def _allocate(self, first: TensorDictBase) -> bool:
        structure = leaf_paths(first)
        if (
            structure is None
            or first.is_locked
            or any(get_leaf(first, path).is_nested for path in structure)
        ):
            return False
        self.leaves = structure
        # Each level's parent level and name, each leaf's level and name: a flush reads every
        # step's entry dicts once and compares their sizes with the first step's.
        sizes = _levels(first)
        index = {level: i for i, (level, _) in enumerate(sizes)}
        self.root_size = sizes[0][1]
        self.level_links = [(index[level[:-1]], level[-1], n) for level, n in sizes[1:]]
        self.slots = [(index[path[:-1]], path[-1]) for path in structure]
        batch = tuple(first.batch_size)
        device = self.device if self.device is not None else first.device
        self.buffer = first.apply(
            lambda x: torch.empty(
                (*batch, self.steps, *x.shape[len(batch) :]),
                dtype=x.dtype,
                device=device if device is not None else x.device,
            ),
            batch_size=[*batch, self.steps],
            device=device,
        )
        self.targets = [self.buffer.get(path) for path in self.leaves]
        # Steps are stacked along dim 0 of time-major blocks (a contiguous write, several times
        # faster than stacking into the strided ``[*batch, T]`` view) and copied into the
        # buffer once per batch. An env without batch dims writes into the buffer directly.
        # Large leaves (images) are stacked into the buffer directly: no second copy is kept.
        self.time_dim = dim = len(batch)
        self.blocks = [
            torch.empty(
                (self.steps, *target.shape[:dim], *target.shape[dim + 1 :]),
                dtype=target.dtype,
                device=target.device,
            )
            if dim and target[(slice(None),) * dim + (0,)].numel() <= MAX_BLOCK_NUMEL
            else None
            for target in self.targets
        ]
        self.copied = 0
        return True

    def start(self) -> None:
        """Begins a new batch (the buffer is reused)."""
        self.pending = []
        self.written = 0
        self.copied = 0
        self.fallback = None

    def append(self, td: TensorDictBase) -> None:
        """Adds the transition of the next step."""
        if self.fallback is not None:
            self.fallback.append(td)
            return
        if self.buffer is None and not self._allocate(td):
            self.fallback = [td]
            return
        self.pending.append(td)
        if len(self.pending) == CHUNK:
            self._flush()

    def _entry_dicts(self, td: TensorDictBase) -> list[dict] | None:
        """The entry dicts of ``td``'s levels, in the order of the first step's levels; None
        when its structure differs (a level more or less, an entry more or less, not plain)."""
        if not is_plain(td):
            return None
        levels = [entries(td)]
        if len(levels[0]) != self.root_size:
            return None
        for parent, name, n in self.level_links:
            node = levels[parent].get(name)
            if not is_plain(node):
                return None
            level = entries(node)
            if len(level) != n:
                return None
            levels.append(level)
        return levels

    def _flush(self) -> None:
        pending, self.pending = self.pending, []
        if not pending:
            return
        steps = [self._entry_dicts(td) for td in pending]
        if any(levels is None for levels in steps):
            self._switch_to_fallback(pending)
            return
        start, n = self.written, len(pending)
        try:
            for (level, name), block, target in zip(self.slots, self.blocks, self.targets):
                column = [levels[level][name] for levels in steps]
                dim = 0 if block is not None else self.time_dim
                view = (
                    block.narrow(0, start, n) if block is not None else target.narrow(dim, start, n)
                )
                if column[0].device == view.device:
                    torch.stack(column, dim, out=view)
                else:
                    view.copy_(torch.stack(column, dim))
        except (KeyError, RuntimeError, TypeError):
            self._switch_to_fallback(pending)
            return
        self.written += n

    def _copy_blocks(self) -> None:
        """Copies the steps written into the time-major blocks since the last copy into the
        buffer."""
        start, n = self.copied, self.written - self.copied
        if self.time_dim and n:
            dim = self.time_dim
            for block, target in zip(self.blocks, self.targets):
                if block is not None:
                    target.narrow(dim, start, n).copy_(block.narrow(0, start, n).movedim(0, dim))
        self.copied = self.written

    def _switch_to_fallback(self, pending: list[TensorDictBase]) -> None:
        self._copy_blocks()
        dim = len(self.buffer.batch_size) - 1
        done = self.buffer[(slice(None),) * dim + (slice(0, self.written),)].clone()
        self.fallback = [*done.unbind(dim), *pending]

    def result(self) -> TensorDictBase:
        """The batch: the buffer itself (reused by the next batch: clone to keep it), or a new
        stack of the transitions when their structures differ."""
        self._flush()
        if self.fallback is not None:
            dim = self.fallback[0].batch_dims
            stacked = LazyStackedTensorDict.lazy_stack(self.fallback, dim)
            if self.device is not None:
                stacked = stacked.to(self.device)
            try:
                keys = set(stacked[0].keys(True, True))
                if all(set(td.keys(True, True)) == keys for td in self.fallback):
                    return stacked.contiguous()
            except RuntimeError:
                pass
            return stacked
        self._copy_blocks()
        if self.written != self.steps:
            dim = len(self.buffer.batch_size) - 1
            return self.buffer[(slice(None),) * dim + (slice(0, self.written),)]
        return self.buffer
