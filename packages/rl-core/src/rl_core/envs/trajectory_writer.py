"""``TrajectoryWriter``: the steps of a rollout or a collector batch, written into one buffer.

``EnvBase.rollout`` and rl-collectors' collectors both turn a sequence of step TensorDicts
(shaped ``env.batch_size``) into one ``[*batch, T]`` TensorDict. Stacking every step at the end
costs a copy per entry and step; this writer allocates the ``[*batch, T]`` buffer from the first
step and fills it a chunk of steps at a time, one ``torch.stack(..., out=...)`` per entry and
chunk. With batch dims the steps are first stacked into time-major blocks (``[T, *batch, ...]``,
a contiguous write, several times faster than writing into the strided ``[*batch, T]`` view)
that are copied into the buffer once when the result is read; leaves of more than
``max_block_numel`` elements per step (images) go straight into the buffer, so no second copy
of them is kept.

A step whose structure differs from the first one (an entry more or less, another shape, a
non-tensor entry, a lazy stack) switches the writer to a lazy stack of every step, so no entry
is lost.
"""

from __future__ import annotations

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from rl_core._accel.seam import entries, get_leaf, is_plain, leaf_paths


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


def _key_set(td: TensorDictBase) -> set[tuple[str, ...]] | None:
    """Every key path of ``td``; None when a lazy stack inside holds different keys per
    element (a dense copy would keep only the shared ones)."""
    if isinstance(td, LazyStackedTensorDict):
        sets = [_key_set(inner) for inner in td.tensordicts]
        if any(keys is None or keys != sets[0] for keys in sets):
            return None
        return sets[0]
    keys: set[tuple[str, ...]] = set()
    for name, value in td.items():
        keys.add((name,))
        if isinstance(value, TensorDictBase):
            inner = _key_set(value)
            if inner is None:
                return None
            keys.update((name, *path) for path in inner)
    return keys


def _same_keys(tds: list[TensorDictBase]) -> bool:
    """Whether every step holds the same entries, so a dense copy loses none."""
    reference = _key_set(tds[0])
    return reference is not None and all(_key_set(td) == reference for td in tds[1:])


class TrajectoryWriter:
    """Writes up to ``steps`` step TensorDicts into one ``[*batch, steps]`` TensorDict.

    The buffer is shaped from the first step appended and kept: :meth:`start` begins a new
    trajectory in the same buffer (a collector's next batch). ``append`` keeps a reference to
    each step until its chunk is written, so callers hand over a fresh TensorDict each step
    (``step``/``step_and_maybe_reset`` build a new root every step).

    Args:
        steps: ``T``, the most steps one trajectory holds.
        device: where the buffer lives; ``None`` keeps the steps' device.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.envs import TrajectoryWriter
        >>> writer = TrajectoryWriter(5)
        >>> for t in range(3):
        ...     writer.append(TensorDict(obs=torch.full((2, 4), float(t)), batch_size=[2]))
        >>> out = writer.result()
        >>> out.batch_size
        torch.Size([2, 3])
        >>> out["obs"][0, :, 0].tolist()
        [0.0, 1.0, 2.0]
    """

    chunk = 64
    """Steps kept before they are stacked into the buffer."""
    max_block_numel = 4096
    """Leaves of at most this many elements per step go through the time-major blocks."""

    def __init__(self, steps: int, *, device: torch.device | str | None = None) -> None:
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"TrajectoryWriter: expected steps >= 1, got {steps!r}.")
        self.steps = steps
        self.device = torch.device(device) if device is not None else None
        self.buffer: TensorDictBase | None = None
        self.start()

    def start(self) -> None:
        """Begins a new trajectory; the buffer, once allocated, is reused."""
        self.pending: list[TensorDictBase] = []
        self.count = 0
        self.written = 0
        self.copied = 0
        self.fallback: list[TensorDictBase] | None = None

    def _allocate(self, first: TensorDictBase) -> bool:
        structure = leaf_paths(first)
        if (
            structure is None
            or first.is_locked
            or any(get_leaf(first, path).is_nested for path in structure)
        ):
            return False
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
        self.targets = [get_leaf(self.buffer, path) for path in structure]
        self.time_dim = dim = len(batch)
        self.blocks = [
            torch.empty(
                (self.steps, *target.shape[:dim], *target.shape[dim + 1 :]),
                dtype=target.dtype,
                device=target.device,
            )
            if dim and target[(slice(None),) * dim + (0,)].numel() <= self.max_block_numel
            else None
            for target in self.targets
        ]
        return True

    def append(self, td: TensorDictBase) -> None:
        """Adds the next step."""
        if self.count == self.steps:
            raise ValueError(
                f"TrajectoryWriter: expected at most {self.steps} steps, got one more."
            )
        self.count += 1
        if self.fallback is not None:
            self.fallback.append(td)
            return
        if self.buffer is None and not self._allocate(td):
            self.fallback = [td]
            return
        self.pending.append(td)
        if len(self.pending) == self.chunk:
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
        except (KeyError, AttributeError, RuntimeError, TypeError):
            self._switch_to_fallback(pending)
            return
        self.written += n

    def _copy_blocks(self) -> None:
        """Copies the steps stacked into the time-major blocks since the last copy into the
        buffer."""
        start, n, dim = self.copied, self.written - self.copied, self.time_dim
        if dim and n:
            for block, target in zip(self.blocks, self.targets):
                if block is not None:
                    target.narrow(dim, start, n).copy_(block.narrow(0, start, n).movedim(0, dim))
        self.copied = self.written

    def _switch_to_fallback(self, pending: list[TensorDictBase]) -> None:
        self._copy_blocks()
        # A copy: the buffer is reused by the next trajectory.
        done = self.buffer[(slice(None),) * self.time_dim + (slice(0, self.written),)].clone()
        self.fallback = [*done.unbind(self.time_dim), *pending]

    def result(self, *, return_contiguous: bool = True) -> TensorDictBase:
        """The trajectory so far, ``[*batch, T]``.

        Normally the buffer itself, or a view of its first ``T`` steps (the next trajectory
        overwrites it: clone to keep it). When the steps' structures differ, a lazy stack of
        them, made dense when ``return_contiguous`` and every step holds the same entries.
        """
        self._flush()
        if self.fallback is not None:
            stacked = LazyStackedTensorDict.lazy_stack(self.fallback, self.fallback[0].batch_dims)
            if self.device is not None:
                stacked = stacked.to(self.device)
            if return_contiguous and _same_keys(self.fallback):
                try:
                    return stacked.contiguous()
                except RuntimeError:
                    pass
            return stacked
        if self.buffer is None:
            raise RuntimeError("TrajectoryWriter.result: no step was appended.")
        self._copy_blocks()
        if self.written != self.steps:
            return self.buffer[(slice(None),) * self.time_dim + (slice(0, self.written),)]
        return self.buffer


__all__ = ["TrajectoryWriter"]
