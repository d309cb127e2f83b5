"""The batch writer: fills a preallocated ``[*batch, T]`` TensorDict, a chunk of steps at a time."""

from __future__ import annotations

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

# Steps kept before they are stacked into the buffer (one ``torch.stack(..., out=...)`` per
# entry and chunk instead of one copy per entry and step).
CHUNK = 32


def _structure(td: TensorDictBase) -> list[tuple[str, ...]] | None:
    """The leaf paths of a (nested) TensorDict of tensors; None for anything else."""
    leaves: list[tuple[str, ...]] = []

    def visit(node: TensorDictBase, prefix: tuple[str, ...]) -> bool:
        if not isinstance(node, TensorDict):
            return False
        for name, value in node.items():
            if isinstance(value, TensorDictBase):
                if not visit(value, (*prefix, name)):
                    return False
            elif isinstance(value, torch.Tensor) and not value.is_nested:
                leaves.append((*prefix, name))
            else:
                return False
        return True

    return leaves if visit(td, ()) else None


class BatchWriter:
    """Writes the transitions of one batch into a ``[*batch, T]`` TensorDict allocated once.

    The buffer is shaped from the first transition it sees and reused for every batch. Each
    ``append`` keeps a reference to the transition (the collector hands over fresh TensorDicts:
    ``step_and_maybe_reset`` builds a new root every step); every ``CHUNK`` steps the kept
    transitions are stacked into the buffer, one op per entry. A transition whose structure
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
        self.keys: list[str | tuple[str, ...]] = []
        self.targets: list[torch.Tensor] = []
        self.pending: list[TensorDictBase] = []
        self.written = 0
        self.fallback: list[TensorDictBase] | None = None

    def _allocate(self, first: TensorDictBase) -> bool:
        structure = _structure(first)
        if structure is None or first.is_locked:
            return False
        self.leaves = structure
        # The keys ``items(True, True)`` gives: a str at the root, a tuple below.
        self.keys = [path[0] if len(path) == 1 else path for path in self.leaves]
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
        return True

    def start(self) -> None:
        """Begins a new batch (the buffer is reused)."""
        self.pending = []
        self.written = 0
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

    def _flush(self) -> None:
        pending, self.pending = self.pending, []
        if not pending:
            return
        # One walk per transition gives its leaves; a leaf more or less than the first
        # transition's (or one missing) means another structure.
        steps = [dict(td.items(True, True)) for td in pending]
        if any(len(leaves) != len(self.keys) for leaves in steps):
            self._switch_to_fallback(pending)
            return
        dim = len(self.buffer.batch_size) - 1
        start, n = self.written, len(pending)
        try:
            for key, target in zip(self.keys, self.targets):
                column = [leaves[key] for leaves in steps]
                view = target.narrow(dim, start, n)
                if column[0].device == target.device:
                    torch.stack(column, dim, out=view)
                else:
                    view.copy_(torch.stack(column, dim))
        except (KeyError, RuntimeError, TypeError):
            self._switch_to_fallback(pending)
            return
        self.written += n

    def _switch_to_fallback(self, pending: list[TensorDictBase]) -> None:
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
        if self.written != self.steps:
            dim = len(self.buffer.batch_size) - 1
            return self.buffer[(slice(None),) * dim + (slice(0, self.written),)]
        return self.buffer
