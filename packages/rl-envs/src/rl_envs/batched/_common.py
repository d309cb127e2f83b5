"""Helpers shared by SerialEnv and ParallelEnv: env metadata, factories, fast TensorDict plumbing."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import NestedKey
from rl_core.specs import Composite

Path = tuple[str, ...]


@dataclass(frozen=True)
class EnvMetadata:
    """What a batched env needs to know about its sub-envs without holding one.

    Attributes:
        batch_size: the sub-env batch size.
        device: the sub-env device.
        output_spec: the sub-env ``output_spec`` (observations, reward, done flags).
        input_spec: the sub-env ``input_spec`` (actions, states).
        env_type: the sub-env class name, for messages.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> from rl_envs.batched import EnvMetadata
        >>> meta = EnvMetadata.from_env(CountingEnv(batch_size=[2]))
        >>> meta.env_type, tuple(meta.batch_size)
        ('CountingEnv', (2,))
        >>> meta.difference(EnvMetadata.from_env(CountingEnv()))
        'batch_size () instead of (2,)'
    """

    batch_size: torch.Size
    device: torch.device | None
    output_spec: Composite
    input_spec: Composite
    env_type: str

    @classmethod
    def from_env(cls, env: EnvBase) -> EnvMetadata:
        """Reads (copies of) the metadata of ``env``."""
        return cls(
            batch_size=torch.Size(env.batch_size),
            device=env.device,
            output_spec=env.output_spec.clone(),
            input_spec=env.input_spec.clone(),
            env_type=type(env).__name__,
        )

    def difference(self, other: EnvMetadata) -> str | None:
        """Names the first thing that differs from ``other``; ``None`` when they agree."""
        if self.batch_size != other.batch_size:
            return f"batch_size {tuple(other.batch_size)} instead of {tuple(self.batch_size)}"
        if self.device != other.device:
            return f"device {other.device} instead of {self.device}"
        for name in ("output_spec", "input_spec"):
            mine, theirs = getattr(self, name), getattr(other, name)
            for group in mine.keys():
                if group not in theirs.keys() or mine[group] != theirs[group]:
                    return f"a different {group}: {theirs[group] if group in theirs.keys() else None!r}"
        return None


def as_env_factories(
    num_workers: int,
    create_env_fn: Callable[..., EnvBase] | Sequence[Callable[..., EnvBase]],
    create_env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
    where: str,
) -> list[Callable[[], EnvBase]]:
    """One zero-argument env factory per sub-env, from a function (or a list of them).

    Raises:
        ValueError: ``num_workers`` < 1, or a list whose length is not ``num_workers``.
        TypeError: a factory that is not callable, or kwargs that are not mappings.
    """
    if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
        raise ValueError(f"{where}: expected num_workers >= 1, got {num_workers!r}.")
    fns = _per_worker(num_workers, create_env_fn, "create_env_fn", where)
    if create_env_kwargs is None:
        kwargs_list: list[Mapping[str, Any]] = [{}] * num_workers
    else:
        kwargs_list = _per_worker(num_workers, create_env_kwargs, "create_env_kwargs", where)
    factories = []
    for i, (fn, kwargs) in enumerate(zip(fns, kwargs_list)):
        if not callable(fn):
            raise TypeError(
                f"{where}: create_env_fn[{i}] is a {type(fn).__name__}, expected a callable "
                f"returning an env (a class, a function or an EnvCreator)."
            )
        if not isinstance(kwargs, Mapping):
            raise TypeError(
                f"{where}: create_env_kwargs[{i}] is a {type(kwargs).__name__}, expected a dict."
            )
        factories.append(_bind(fn, dict(kwargs)))
    return factories


def _per_worker(num_workers: int, value: Any, name: str, where: str) -> list[Any]:
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != num_workers:
            raise ValueError(
                f"{where}: got {len(value)} {name} for num_workers={num_workers}; pass one per "
                f"sub-env, or a single one for all."
            )
        return list(value)
    return [value] * num_workers


def _bind(fn: Callable[..., EnvBase], kwargs: dict[str, Any]) -> Callable[[], EnvBase]:
    from rl_envs.batched.env_creator import EnvCreator

    if isinstance(fn, EnvCreator):
        return (
            fn if not kwargs else EnvCreator(fn.create_env_fn, {**fn.create_env_kwargs, **kwargs})
        )
    return EnvCreator(fn, kwargs)


def check_env(env: Any, index: int, where: str) -> EnvBase:
    if not isinstance(env, EnvBase):
        raise TypeError(
            f"{where}: create_env_fn[{index}] returned a {type(env).__name__}, expected an "
            f"EnvBase (wrap gymnasium envs with GymEnv/GymWrapper)."
        )
    return env


def leaf_paths(spec: Composite) -> list[Path]:
    return [
        (key,) if isinstance(key, str) else tuple(key)
        for key in spec.keys(include_nested=True, leaves_only=True)
    ]


def unique(paths: Sequence[Path]) -> list[Path]:
    return list(dict.fromkeys(paths))


def get_leaf(td: TensorDictBase, path: Path) -> Any:
    """``td.get(path)`` through the entry dicts of plain TensorDicts; ``None`` when missing."""
    node: Any = td
    for name in path:
        if type(node) is not TensorDict:
            return td.get(path, None)
        node = node._tensordict.get(name)
        if node is None:
            return None
    return node


class TreeBuilder:
    """Builds TensorDicts of a fixed (possibly nested) key layout from lists of leaf values.

    Args:
        paths: the leaf paths, in the order the values will be given.
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)
        self.flat = all(len(p) == 1 for p in self.paths)
        self.names = [p[0] for p in self.paths]

    def build(
        self, values: Sequence[Any], batch_size: torch.Size, device: torch.device | None
    ) -> TensorDict:
        if self.flat:
            return TensorDict._new_unsafe(
                dict(zip(self.names, values)), batch_size=batch_size, device=device
            )
        root: dict[str, Any] = {}
        for path, value in zip(self.paths, values):
            node = root
            for name in path[:-1]:
                node = node.setdefault(name, {})
            node[path[-1]] = value
        return _nested(root, batch_size, device)


def _nested(
    tree: dict[str, Any], batch_size: torch.Size, device: torch.device | None
) -> TensorDict:
    source = {
        name: _nested(value, batch_size, device) if isinstance(value, dict) else value
        for name, value in tree.items()
    }
    return TensorDict._new_unsafe(source, batch_size=batch_size, device=device)


def plain_leaf_paths(td: TensorDictBase) -> list[Path] | None:
    """Leaf paths of a plain nested TensorDict of tensors; ``None`` for anything else."""
    paths: list[Path] = []

    def visit(node: Any, prefix: Path) -> bool:
        if type(node) is not TensorDict:
            return False
        for name, value in node._tensordict.items():
            if type(value) is torch.Tensor:
                paths.append((*prefix, name))
            elif not visit(value, (*prefix, name)):
                return False
        return True

    return paths if visit(td, ()) else None


def key_of(path: Path) -> NestedKey:
    return path[0] if len(path) == 1 else path


def clone_leaves(
    td: TensorDictBase, builder: TreeBuilder, leaves: Sequence[torch.Tensor], device: Any
) -> TensorDict:
    """A new TensorDict of fresh copies of ``leaves`` (the leaves of ``td``) on ``device``."""
    if device is not None and leaves and leaves[0].device != device:
        values = [leaf.to(device, copy=True) for leaf in leaves]
    else:
        values = [leaf.clone() for leaf in leaves]
    return builder.build(values, td.batch_size, device)


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


def read_frame(fd: int) -> bytes:
    """One message sent with ``Connection.send_bytes``, read from the pipe ``fd`` directly.

    A small message takes one ``read`` call instead of the two of ``Connection.recv_bytes``
    (length, then payload). The peer must not have sent a second message yet, which the
    one-reply-per-command protocol of ParallelEnv guarantees.

    Raises:
        EOFError: the other end of the pipe is closed (its process died).
    """
    data = os.read(fd, 65536)
    while len(data) < 4:
        more = os.read(fd, 4 - len(data))
        if not more:
            raise EOFError
        data += more
    (size,) = struct.unpack_from("!i", data)
    start = 4
    if size == -1:  # a message over 2 GiB: an 8-byte length follows
        while len(data) < 12:
            more = os.read(fd, 12 - len(data))
            if not more:
                raise EOFError
            data += more
        (size,) = struct.unpack_from("!Q", data, 4)
        start = 12
    end = start + size
    if len(data) >= end:
        if len(data) > end:
            raise RuntimeError(
                "ParallelEnv: two messages arrived at once on a worker pipe; the protocol "
                "expects one reply per command."
            )
        return data[start:]
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = len(data) - start
    view[:got] = data[start:]
    while got < size:
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise EOFError
        got += n
    return bytes(buffer)


__all__ = [
    "EnvMetadata",
    "RowCopies",
    "SharedBuffers",
    "TreeBuilder",
    "as_env_factories",
    "check_env",
    "clone_leaves",
    "entry_views",
    "get_leaf",
    "key_of",
    "leaf_paths",
    "read_frame",
    "plain_leaf_paths",
    "unique",
]
