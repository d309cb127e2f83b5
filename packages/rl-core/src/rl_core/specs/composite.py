"""Composite: a nested mapping of specs sharing a batch shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.specs._base import (
    DeviceLike,
    ShapeLike,
    TensorSpec,
    _as_device,
    _as_size,
    _expand_to,
    _extend_index,
    _fmt_shape,
    _index_shape,
    _norm_dim,
    _prepend,
    _reshape_to,
    _unpack_shape,
)
from rl_core.specs._tree import _MISSING, _as_path, _is_key, _show, _SpecTree


class Composite(_SpecTree):
    """A nested mapping of specs that share a batch shape: the spec of a TensorDict.

    ``shape`` is the batch shape: every entry's shape starts with it. Entries are specs,
    nested Composites (plain dicts are converted), or ``None`` (a key that exists but has
    no spec; ``rand``/``zero`` skip it). Nested keys are tuples of strings.

    Args:
        *maybe_dict: at most one mapping of entries.
        shape: the batch shape. Defaults to ``()``.
        device: if set, entries are moved to it when set, and values are TensorDicts on it.
            ``None`` keeps each entry's own device. Defaults to ``None``.
        **entries: more entries, by name.

    Raises:
        TypeError: more than one positional argument, or an entry is not a spec.
        ValueError: an entry's shape does not start with ``shape`` (the message names it).

    Examples:
        >>> import torch
        >>> from rl_core.specs import Bounded, Composite, Unbounded
        >>> spec = Composite(
        ...     observation=Bounded(-1.0, 1.0, shape=(4, 3)),
        ...     next={"reward": Unbounded(shape=(4, 1))},
        ...     shape=(4,),
        ... )
        >>> spec
        Composite(
            observation: Bounded(shape=(4, 3), dtype=float32, low=-1.0, high=1.0),
            next: Composite(
                reward: Unbounded(shape=(4, 1), dtype=float32),
                shape=(4,)),
            shape=(4,))
        >>> td = spec.rand()
        >>> td.batch_size, td["next", "reward"].shape
        (torch.Size([4]), torch.Size([4, 1]))
        >>> spec.is_in(td)
        True
        >>> spec.keys(include_nested=True, leaves_only=True)
        ['observation', ('next', 'reward')]
        >>> spec[0]["observation"].shape
        torch.Size([3])
    """

    def __init__(
        self,
        *maybe_dict: Mapping[str, Any] | Composite | None,
        shape: ShapeLike | None = None,
        device: DeviceLike = None,
        **entries: Any,
    ) -> None:
        if len(maybe_dict) > 1:
            raise TypeError(
                f"Composite: expected at most one positional mapping of entries, got "
                f"{len(maybe_dict)}. Merge them into one dict or pass entries by name."
            )
        self.shape = torch.Size(()) if shape is None else _as_size(shape, "Composite")
        self.device = _as_device(device, "Composite")
        self._specs: dict[str, TensorSpec | None] = {}
        self._locked = False
        source: dict[str, Any] = {}
        if maybe_dict and maybe_dict[0] is not None:
            given = maybe_dict[0]
            if not isinstance(given, Mapping | Composite):
                raise TypeError(
                    f"Composite: expected a mapping of entries, got {type(given).__name__}."
                )
            source.update(given.items())
        source.update(entries)
        for key, spec in source.items():
            self._set((key,) if isinstance(key, str) else _as_path(key, "Composite"), spec)

    def __getitem__(self, index: Any) -> Any:
        """A key (string or tuple of strings) gets an entry; anything else indexes the batch.

        Raises:
            KeyError: a key is missing.
            IndexError: an index does not fit the batch shape.
        """
        if _is_key(index):
            return self.get(index)
        new_batch = _index_shape(self.shape, index, "Composite.__getitem__")
        out = self._new(new_batch)
        n = self.ndim
        for k, spec in self._specs.items():
            out._specs[k] = (
                None
                if spec is None
                else spec[_extend_index(index, spec.ndim - getattr(spec, "_event_ndim", 0) - n)]
            )
        return out

    # -- values -----------------------------------------------------------------------------

    def _fill(self, method: str, shape: ShapeLike) -> TensorDict:
        batch = _prepend(shape, self.shape, f"Composite.{method}")
        out = {}
        for k, spec in self._specs.items():
            if spec is not None:
                out[k] = getattr(spec, method)(shape)
        return TensorDict(out, batch_size=batch, device=self.device)

    def rand(self, shape: ShapeLike = ()) -> TensorDict:
        """Samples every entry (``None`` entries skipped) into a TensorDict on ``self.device``."""
        return self._fill("rand", shape)

    def zero(self, shape: ShapeLike = ()) -> TensorDict:
        """All-zeros values for every entry, as a TensorDict (see :meth:`rand`)."""
        return self._fill("zero", shape)

    def one(self, shape: ShapeLike = ()) -> TensorDict:
        """All-ones values for every entry, as a TensorDict (see :meth:`rand`)."""
        return self._fill("one", shape)

    def _failure(
        self, value: Any, path: tuple[str, ...] = ()
    ) -> tuple[str, tuple[str, ...], str] | None:
        if not isinstance(value, TensorDictBase):
            return ("Composite", path, f"is a {type(value).__name__}, expected a TensorDict")
        for k, spec in self._specs.items():
            if spec is None:
                continue
            entry = value.get(k, None)
            if entry is None:
                return ("Composite", (*path, k), "is missing from the TensorDict")
            failure = spec._failure(entry, (*path, k))
            if failure is not None:
                return failure
        return None

    def is_in(self, value: Any) -> bool:
        """Whether every entry of the spec is in ``value`` and in its space.

        Keys of ``value`` that the spec does not list are ignored.
        """
        return self._failure(value) is None

    def project(self, value: TensorDictBase) -> TensorDictBase:
        """A shallow copy of ``value`` with each spec'd entry projected into its space.

        Raises:
            TypeError: ``value`` is not a TensorDict.
            KeyError: an entry of the spec is missing from ``value``.
        """
        if not isinstance(value, TensorDictBase):
            raise TypeError(
                f"Composite.project: expected a TensorDict, got {type(value).__name__}."
            )
        out = value.copy()
        for k, spec in self._specs.items():
            if spec is None:
                continue
            entry = value.get(k, None)
            if entry is None:
                raise KeyError(f"Composite.project: the TensorDict has no entry {k!r}.")
            out.set(k, spec.project(entry))
        return out

    def encode(self, value: Any, *, ignore_device: bool = False) -> TensorDict:
        """Encodes a (nested) mapping of numpy arrays / python values into a TensorDict.

        Only the keys present in ``value`` are encoded.

        Args:
            value: a mapping (or TensorDict) whose keys are entries of the spec.

        Keyword Args:
            ignore_device: keep the values' devices. Defaults to ``False``.

        Returns:
            A TensorDict of batch size ``self.shape``.

        Raises:
            KeyError: ``value`` has a key the spec does not list, or one whose spec is None.
            ValueError, TypeError: an entry cannot be encoded (the message names the key).
        """
        return self._encode(value, ignore_device, ())

    def _encode(self, value: Any, ignore_device: bool, path: tuple[str, ...]) -> TensorDict:
        if not isinstance(value, Mapping | TensorDictBase):
            where = f" at key {_show(path)}" if path else ""
            raise TypeError(
                f"Composite.encode: expected a mapping{where}, got {type(value).__name__}."
            )
        out = {}
        for k, v in value.items():
            full = (*path, k)
            spec = self._specs.get(k, _MISSING)
            if spec is _MISSING or spec is None:
                raise KeyError(
                    f"Composite.encode: the spec has no entry at key {_show(full)} "
                    f"(spec keys: {list(self._specs)})."
                )
            if isinstance(spec, Composite):
                out[k] = spec._encode(v, ignore_device, full)
                continue
            try:
                out[k] = spec.encode(v, ignore_device=ignore_device)
            except (TypeError, ValueError) as err:
                raise type(err)(f"Composite.encode at key {_show(full)}: {err}") from None
        return TensorDict(out, batch_size=self.shape, device=None if ignore_device else self.device)

    def to_numpy(self, value: TensorDictBase, *, safe: bool = False) -> dict[str, Any]:
        """Converts a TensorDict of the spec into a nested dict of numpy arrays.

        Keyword Args:
            safe: check the value with :meth:`assert_is_in` first. Defaults to ``False``.

        Raises:
            TypeError: ``value`` is not a TensorDict.
            KeyError: an entry of the spec is missing.
        """
        if safe:
            self.assert_is_in(value)
        if not isinstance(value, TensorDictBase):
            raise TypeError(
                f"Composite.to_numpy: expected a TensorDict, got {type(value).__name__}."
            )
        out = {}
        for k, spec in self._specs.items():
            if spec is None:
                continue
            entry = value.get(k, None)
            if entry is None:
                raise KeyError(f"Composite.to_numpy: the TensorDict has no entry {k!r}.")
            out[k] = spec.to_numpy(entry)
        return out

    # -- device, copies and shape -----------------------------------------------------------

    def _map(self, fn: Any, shape: torch.Size | None = None, device: Any = _MISSING) -> Composite:
        out = self._new(shape, device)
        for k, spec in self._specs.items():
            out._specs[k] = None if spec is None else fn(spec)
        return out

    def to(self, device: DeviceLike | torch.dtype) -> Composite:
        """A Composite on ``device`` with every entry moved there (``self`` if already); a
        ``torch.dtype`` instead casts every tensor entry to it.

        Raises:
            TypeError: an entry cannot hold the dtype (e.g. a Categorical cast to a float
                dtype); the message names the key.
        """
        if isinstance(device, torch.dtype):
            out = self._new(None, _MISSING)
            for k, spec in self._specs.items():
                try:
                    out._specs[k] = None if spec is None else spec.to(device)
                except (TypeError, ValueError) as err:
                    raise type(err)(f"Composite.to: entry {k!r}: {err}") from None
            return out
        dev = _as_device(device, "Composite.to")
        if dev == self.device and dev is not None:
            return self
        return self._map(lambda s: s.to(dev), device=dev)

    def clone(self) -> Composite:
        """A deep, unlocked copy."""
        return self._map(lambda s: s.clone())

    def expand(self, *shape: Any) -> Composite:
        """A Composite of a new batch shape, each entry expanded to ``batch + its own dims``.

        Args:
            *shape: the new batch shape (``Tensor.expand`` rules against ``self.shape``).

        Raises:
            ValueError: the shape is not an expansion of the batch shape.
        """
        new = _expand_to(self.shape, _unpack_shape(shape), "Composite.expand")
        n = self.ndim
        return self._map(lambda s: s.expand(*new, *s.shape[n:]), shape=new)

    def squeeze(self, dim: int | tuple[int, ...] | None = None) -> Composite:
        """Removes singleton batch dims (all, or those in ``dim``) from the batch and entries."""
        where = "Composite.squeeze"
        if dim is None:
            dims = tuple(i for i, s in enumerate(self.shape) if s == 1)
        else:
            given = dim if isinstance(dim, tuple | list) else (dim,)
            dims = tuple(sorted({_norm_dim(d, self.ndim, where) for d in given}))
            dims = tuple(d for d in dims if self.shape[d] == 1)
        new = torch.Size(s for i, s in enumerate(self.shape) if i not in dims)
        return self._map(lambda s: s.squeeze(dims) if dims else s, shape=new)

    def unsqueeze(self, dim: int) -> Composite:
        """Inserts a singleton batch dim at ``dim`` (in ``[-ndim - 1, ndim]``)."""
        pos = _norm_dim(dim, self.ndim + 1, "Composite.unsqueeze")
        new = torch.Size((*self.shape[:pos], 1, *self.shape[pos:]))
        return self._map(lambda s: s.unsqueeze(pos), shape=new)

    def reshape(self, *shape: Any) -> Composite:
        """Reshapes the batch shape (one ``-1`` allowed); entries keep their trailing dims."""
        new = _reshape_to(self.shape, _unpack_shape(shape), "Composite.reshape")
        n = self.ndim
        return self._map(lambda s: s.reshape(*new, *s.shape[n:]), shape=new)

    # -- comparison and display -------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Composite):
            return False
        return (
            self.shape == other.shape
            and self.device == other.device
            and self._specs.keys() == other._specs.keys()
            and all(self._specs[k] == other._specs[k] for k in self._specs)
        )

    def _repr(self, indent: str) -> str:
        inner = indent + "    "
        lines = []
        for k, spec in self._specs.items():
            text = spec._repr(inner) if isinstance(spec, Composite) else repr(spec)
            lines.append(f"{inner}{k}: {text},")
        tail = f"shape={_fmt_shape(self.shape)}"
        if self.device is not None:
            tail += f", device={self.device}"
        return "Composite(\n" + "\n".join([*lines, f"{inner}{tail})"])

    def __repr__(self) -> str:
        return self._repr("")
