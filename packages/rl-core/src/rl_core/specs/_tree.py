"""The key-handling half of :class:`~rl_core.specs.Composite`: a nested mapping of specs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Self

import torch

from rl_core.keys import NestedKey
from rl_core.specs._base import TensorSpec, _fmt_shape

_MISSING = object()  # no default given
_ABSENT = object()  # a missing entry, as a default


def _is_key(key: Any) -> bool:
    return isinstance(key, str) or (
        isinstance(key, tuple) and len(key) > 0 and all(isinstance(k, str) for k in key)
    )


def _as_path(key: Any, where: str) -> tuple[str, ...]:
    """A nested key as a tuple of strings; a plain string is a one-element path."""
    if isinstance(key, str):
        return (key,)
    if _is_key(key):
        return key
    raise TypeError(
        f"{where}: expected a key (a string or a non-empty tuple of strings), got {key!r}."
    )


def _show(path: tuple[str, ...]) -> str:
    return repr(path[0]) if len(path) == 1 else repr(path)


class _SpecTree(TensorSpec):
    """Entries, nested keys, locking and sub-selection for Composite (values live there)."""

    shape: torch.Size
    device: torch.device | None
    _specs: dict[str, TensorSpec | None]
    _locked: bool

    @property
    def dtype(self) -> torch.dtype | None:
        """The dtype shared by all leaves, or ``None`` if they differ (or there are none)."""
        leaves = self.values(include_nested=True, leaves_only=True)
        dtypes = {s.dtype for s in leaves if s is not None and s.dtype is not None}
        return dtypes.pop() if len(dtypes) == 1 else None

    @property
    def is_locked(self) -> bool:
        """Whether entries can be set or deleted (see :meth:`lock_`)."""
        return self._locked

    def _check_unlocked(self, what: str) -> None:
        if self._locked:
            raise RuntimeError(
                f"Composite.{what}: the Composite is locked. Call spec.unlock_() first, or "
                f"work on spec.clone()."
            )

    def _check_entry(self, path: tuple[str, ...], spec: Any) -> TensorSpec | None:
        if spec is None:
            return None
        if isinstance(spec, Mapping):
            child = self._new()
            for k, v in spec.items():
                sub = (k,) if isinstance(k, str) else _as_path(k, "Composite.set")
                child._set(sub, v, (*path, *sub))
            spec = child
        if not isinstance(spec, TensorSpec):
            raise TypeError(
                f"Composite.set: expected a TensorSpec, a dict of specs or None at key "
                f"{_show(path)}, got {type(spec).__name__}."
            )
        n = len(self.shape)
        if spec.shape[:n] != self.shape:
            raise ValueError(
                f"Composite.set: the entry at key {_show(path)} has shape "
                f"{_fmt_shape(spec.shape)}, which does not start with the batch shape "
                f"{_fmt_shape(self.shape)}. Build the entry with a shape that starts with "
                f"{_fmt_shape(self.shape)}, e.g. spec.expand({', '.join(map(str, self.shape))}, "
                f"*spec.shape) for an unbatched spec."
            )
        if self.device is not None and spec.device != self.device:
            spec = spec.to(self.device)
        return spec

    def _set(self, path: tuple[str, ...], spec: Any, full: tuple[str, ...] | None = None) -> None:
        full = path if full is None else full
        self._check_unlocked("set")
        head = path[0]
        if len(path) == 1:
            self._specs[head] = self._check_entry(full, spec)
            return
        child = self._specs.get(head)
        if child is None:
            child = self._new()
            self._specs[head] = child
        elif not isinstance(child, _SpecTree):
            raise KeyError(
                f"Composite.set: cannot set key {_show(full)}: {head!r} holds a "
                f"{type(child).__name__}, not a Composite. Delete it first or use another key."
            )
        child._set(path[1:], spec, full)

    def set(self, key: NestedKey, spec: TensorSpec | Mapping[str, Any] | None) -> Self:
        """Sets an entry; a nested key creates the missing intermediate Composites.

        Args:
            key: a string or a tuple of strings.
            spec: a spec, a dict of specs (made a Composite of the same batch shape) or
                ``None``.

        Returns:
            ``self``.

        Raises:
            RuntimeError: the Composite is locked.
            TypeError: bad key or spec type.
            ValueError: the spec's shape does not start with the batch shape.
            KeyError: an intermediate key holds a leaf spec.
        """
        self._set(_as_path(key, "Composite.set"), spec)
        return self

    def __setitem__(self, key: NestedKey, spec: TensorSpec | Mapping[str, Any] | None) -> None:
        self._set(_as_path(key, "Composite.__setitem__"), spec)

    def get(self, key: NestedKey, default: Any = _MISSING) -> Any:
        """Returns the entry at ``key`` (nested keys allowed).

        Args:
            key: a string or a tuple of strings.
            default: returned when the key is missing; without it a KeyError is raised.

        Raises:
            KeyError: the key is missing and no default is given.
        """
        path = _as_path(key, "Composite.get")
        node: Any = self
        for i, k in enumerate(path):
            if not isinstance(node, _SpecTree) or k not in node._specs:
                if default is not _MISSING:
                    return default
                where = "" if i == 0 else f" (no {k!r} under {_show(path[:i])})"
                raise KeyError(
                    f"Composite: no entry at key {_show(path)}{where}. Available keys: "
                    f"{self.keys(include_nested=True)}."
                )
            node = node._specs[k]
        return node

    def __delitem__(self, key: NestedKey) -> None:
        path = _as_path(key, "Composite.__delitem__")
        parent = self.get(path[:-1]) if len(path) > 1 else self
        if not isinstance(parent, _SpecTree) or path[-1] not in parent._specs:
            raise KeyError(f"Composite.__delitem__: no entry at key {_show(path)}.")
        self._check_unlocked("__delitem__")
        parent._check_unlocked("__delitem__")
        del parent._specs[path[-1]]

    def __contains__(self, key: object) -> bool:
        if not _is_key(key):
            return False
        return self.get(key, _ABSENT) is not _ABSENT  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def _walk(
        self, include_nested: bool, leaves_only: bool, prefix: tuple[str, ...] = ()
    ) -> Iterator[tuple[NestedKey, TensorSpec | None]]:
        for k, spec in self._specs.items():
            path = (*prefix, k)
            nested = isinstance(spec, _SpecTree)
            if not (leaves_only and nested):
                yield (k if not prefix else path), spec
            if include_nested and nested:
                yield from spec._walk(include_nested, leaves_only, path)

    def keys(self, include_nested: bool = False, leaves_only: bool = False) -> list[NestedKey]:
        """The keys, in insertion order.

        Args:
            include_nested: also list the keys inside nested Composites, as tuples.
            leaves_only: leave out the keys that hold Composites (``None`` entries are
                leaves).

        Returns:
            A list of strings (top level) and tuples (nested).
        """
        return [k for k, _ in self._walk(include_nested, leaves_only)]

    def items(
        self, include_nested: bool = False, leaves_only: bool = False
    ) -> list[tuple[NestedKey, TensorSpec | None]]:
        """``(key, spec)`` pairs, with the flags of :meth:`keys`."""
        return list(self._walk(include_nested, leaves_only))

    def values(
        self, include_nested: bool = False, leaves_only: bool = False
    ) -> list[TensorSpec | None]:
        """The entries, with the flags of :meth:`keys`."""
        return [v for _, v in self._walk(include_nested, leaves_only)]

    def update(self, other: _SpecTree | Mapping[str, Any]) -> Self:
        """Sets every entry of ``other``; nested Composites are merged, not replaced.

        Args:
            other: a Composite or a mapping of keys to specs.

        Returns:
            ``self``.

        Raises:
            RuntimeError: the Composite is locked.
        """
        self._check_unlocked("update")
        if not isinstance(other, Mapping | _SpecTree):
            raise TypeError(
                f"Composite.update: expected a Composite or a mapping, got {type(other).__name__}."
            )
        for key, spec in other.items():
            current = self._specs.get(key) if isinstance(key, str) else None
            if isinstance(current, _SpecTree) and isinstance(spec, _SpecTree | Mapping):
                current.update(spec)
            else:
                self.set(key, spec)
        return self

    def _new(self, shape: torch.Size | None = None, device: Any = _MISSING) -> Self:
        """An empty Composite with this one's settings, built without validation."""
        out = object.__new__(type(self))
        out.shape = self.shape if shape is None else shape
        out.device = self.device if device is _MISSING else device
        out._specs = {}
        out._locked = False
        return out

    def _copy_tree(self) -> Self:
        out = self._new()
        for k, spec in self._specs.items():
            out._specs[k] = spec._copy_tree() if isinstance(spec, _SpecTree) else spec
        return out

    def select(self, *keys: NestedKey, strict: bool = True) -> Self:
        """A new Composite with only ``keys`` (entries are shared, not copied).

        Args:
            *keys: keys to keep, nested ones as tuples.

        Keyword Args:
            strict: raise on a missing key instead of skipping it. Defaults to ``True``.

        Raises:
            KeyError: a key is missing and ``strict`` is set.
        """
        out = self._new()
        for key in keys:
            path = _as_path(key, "Composite.select")
            spec = self.get(path, _ABSENT)
            if spec is _ABSENT:
                if strict:
                    raise KeyError(
                        f"Composite.select: no entry at key {_show(path)}. Available keys: "
                        f"{self.keys(include_nested=True)}. Pass strict=False to skip it."
                    )
                continue
            src, dst = self, out
            for k in path[:-1]:
                src = src._specs[k]  # type: ignore[assignment]
                nxt = dst._specs.get(k)
                if nxt is None:
                    nxt = src._new()
                    dst._specs[k] = nxt
                dst = nxt  # type: ignore[assignment]
            dst._specs[path[-1]] = spec
        return out

    def exclude(self, *keys: NestedKey) -> Self:
        """A new Composite without ``keys`` (missing keys are ignored; entries are shared)."""
        out = self._copy_tree()
        for key in keys:
            path = _as_path(key, "Composite.exclude")
            parent = out.get(path[:-1], None) if len(path) > 1 else out
            if isinstance(parent, _SpecTree):
                parent._specs.pop(path[-1], None)
        return out

    def empty(self) -> Self:
        """A Composite with the same batch shape and device, and no entries."""
        return self._new()

    def lock_(self) -> Self:
        """Locks this Composite and the nested ones: set, delete and update then raise."""
        self._locked = True
        for spec in self._specs.values():
            if isinstance(spec, _SpecTree):
                spec.lock_()
        return self

    def unlock_(self) -> Self:
        """Unlocks this Composite and the nested ones."""
        self._locked = False
        for spec in self._specs.values():
            if isinstance(spec, _SpecTree):
                spec.unlock_()
        return self
