"""What :class:`Stacked` and :class:`StackedComposite` share: a list of specs along a dim."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import torch

from rl_core.specs._base import (
    DeviceLike,
    ShapeLike,
    TensorSpec,
    _as_device,
    _fmt_shape,
    _norm_dim,
)


def _stack_shape(shapes: Sequence[torch.Size], dim: int) -> torch.Size:
    """The shapes stacked at ``dim``; dims that differ across the shapes become ``-1``."""
    first = shapes[0]
    dims = [d if all(s[i] == d for s in shapes) else -1 for i, d in enumerate(first)]
    dims.insert(dim, len(shapes))
    return torch.Size(dims)


class _StackBase(TensorSpec):
    """Specs of different shapes (or bounds, or keys) stacked along ``dim``.

    ``shape`` has ``len(specs)`` at ``dim`` and ``-1`` where the members' dims differ.
    Every operation maps over the members; values are split along ``dim`` and checked
    slice by slice.
    """

    def __init__(self, *specs: TensorSpec, dim: int = 0) -> None:
        name = type(self).__name__
        if len(specs) == 1 and isinstance(specs[0], list | tuple):
            specs = tuple(specs[0])
        if not specs:
            raise ValueError(f"{name}: expected at least one spec to stack, got none.")
        for i, s in enumerate(specs):
            self._check_member(s, i)
        ndims = {s.ndim for s in specs}
        if len(ndims) > 1:
            shapes = ", ".join(_fmt_shape(s.shape) for s in specs)
            raise ValueError(
                f"{name}: expected specs with the same number of dims, got shapes {shapes}."
            )
        ndim = specs[0].ndim
        pos = _norm_dim(dim, ndim + 1, name)
        limit = min(self._stackable_ndim(s) for s in specs)
        if pos > limit:
            raise ValueError(
                f"{name}: cannot stack at dim {dim}: the members have {limit} batch dims, so "
                f"dim must be in [-{ndim + 1}, {limit}] (event dims stay last)."
            )
        self._members: tuple[TensorSpec, ...] = tuple(specs)
        self.dim = pos
        self.shape = _stack_shape([s.shape for s in specs], pos)
        devices = {s.device for s in specs}
        self.device = devices.pop() if len(devices) == 1 else None

    @abstractmethod
    def _check_member(self, spec: Any, i: int) -> None:
        """Raises TypeError if ``spec`` cannot be member ``i`` of this kind of stack."""

    def _stackable_ndim(self, spec: TensorSpec) -> int:
        return spec.ndim - getattr(spec, "_event_ndim", 0)

    def _rebuild(self, specs: Sequence[TensorSpec], dim: int) -> Self:
        out = object.__new__(type(self))
        out._members = tuple(specs)
        out.dim = dim
        out.shape = _stack_shape([s.shape for s in specs], dim)
        devices = {s.device for s in specs}
        out.device = devices.pop() if len(devices) == 1 else None
        return out

    @property
    def specs(self) -> tuple[TensorSpec, ...]:
        """The stacked specs, in order."""
        return self._members

    def __len__(self) -> int:
        return len(self._members)

    @property
    def dtype(self) -> torch.dtype | None:
        """The dtype shared by all members, or ``None`` if they differ."""
        dtypes = {s.dtype for s in self._members}
        return dtypes.pop() if len(dtypes) == 1 else None

    # -- values -----------------------------------------------------------------------------

    @abstractmethod
    def _stack_values(self, values: list[Any], dim: int) -> Any:
        """Stacks the members' values along ``dim``."""

    @abstractmethod
    def _split_value(self, value: Any) -> list[Any] | str:
        """The slices of ``value`` along the stack dim, or the reason it cannot be split."""

    def _fill(self, method: str, shape: ShapeLike) -> Any:
        lead = 1 if isinstance(shape, int) else len(shape)
        values = [getattr(s, method)(shape) for s in self._members]
        return self._stack_values(values, self.dim + lead)

    def rand(self, shape: ShapeLike = ()) -> Any:
        """Samples every member and stacks the samples along the stack dim."""
        return self._fill("rand", shape)

    def zero(self, shape: ShapeLike = ()) -> Any:
        """Zeros of every member, stacked (see :meth:`rand`)."""
        return self._fill("zero", shape)

    def one(self, shape: ShapeLike = ()) -> Any:
        """Ones of every member, stacked (see :meth:`rand`)."""
        return self._fill("one", shape)

    def _failure(
        self, value: Any, path: tuple[str, ...] = ()
    ) -> tuple[str, tuple[str, ...], str] | None:
        parts = self._split_value(value)
        if isinstance(parts, str):
            return (type(self).__name__, path, parts)
        for i, (spec, part) in enumerate(zip(self._members, parts)):
            failure = spec._failure(part, path)
            if failure is not None:
                cls, where, reason = failure
                return cls, where, f"{reason} (slice {i} along stack dim {self.dim})"
        return None

    def _parts_or_raise(self, value: Any, method: str) -> list[Any]:
        parts = self._split_value(value)
        if isinstance(parts, str):
            raise ValueError(f"{type(self).__name__}.{method}: the value {parts}.")
        return parts

    def project(self, value: Any) -> Any:
        """Projects each slice into its member's space and stacks the results.

        Raises:
            ValueError: the value cannot be split into ``len(self)`` slices.
        """
        parts = self._parts_or_raise(value, "project")
        return self._stack_values([s.project(p) for s, p in zip(self._members, parts)], self.dim)

    def encode(self, value: Any, *, ignore_device: bool = False) -> Any:
        """Encodes each slice (a sequence, or an array split along the stack dim) and stacks.

        Raises:
            ValueError: the value does not have ``len(self)`` slices.
        """
        if isinstance(value, np.ndarray | torch.Tensor):
            parts: list[Any] = list(value.swapaxes(0, self.dim)) if value.ndim else []
        elif isinstance(value, Sequence) and not isinstance(value, str):
            parts = list(value)
        else:
            parts = self._parts_or_raise(value, "encode")
        if len(parts) != len(self._members):
            raise ValueError(
                f"{type(self).__name__}.encode: expected {len(self._members)} slices along dim "
                f"{self.dim}, got {len(parts)}."
            )
        encoded = [s.encode(p, ignore_device=ignore_device) for s, p in zip(self._members, parts)]
        return self._stack_values(encoded, self.dim)

    def to_numpy(self, value: Any, *, safe: bool = False) -> Any:
        """Converts each slice with its member; equal-shaped arrays are stacked, else a list.

        Keyword Args:
            safe: check the value with :meth:`assert_is_in` first. Defaults to ``False``.
        """
        if safe:
            self.assert_is_in(value)
        parts = self._parts_or_raise(value, "to_numpy")
        arrays = [s.to_numpy(p) for s, p in zip(self._members, parts)]
        if all(isinstance(a, np.ndarray) for a in arrays) and len({a.shape for a in arrays}) == 1:
            return np.stack(arrays, self.dim)
        return arrays

    # -- device, copies and shape -----------------------------------------------------------

    def to(self, device: DeviceLike | torch.dtype) -> Self:
        """Moves every member to ``device``; a ``torch.dtype`` instead casts them to it."""
        if isinstance(device, torch.dtype):
            return self._rebuild([s.to(device) for s in self._members], self.dim)
        dev = _as_device(device, f"{type(self).__name__}.to")
        return self._rebuild([s.to(dev) for s in self._members], self.dim)

    def clone(self) -> Self:
        """A deep copy."""
        return self._rebuild([s.clone() for s in self._members], self.dim)

    def expand(self, *shape: Any) -> Self:
        """Prepends batch dims: ``shape`` is ``(*new_dims, *self.shape)`` (``-1`` keeps a dim).

        Raises:
            ValueError: the trailing dims do not match ``self.shape``.
        """
        name = f"{type(self).__name__}.expand"
        dims = list(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else list(shape)
        lead = len(dims) - self.ndim
        tail = dims[lead:]
        if lead < 0 or any(d not in (-1, s) for d, s in zip(tail, self.shape)):
            raise ValueError(
                f"{name}: expected (*new_dims, *{_fmt_shape(self.shape)}) with -1 allowed in "
                f"the trailing dims, got {_fmt_shape(dims)}. Stacked specs only gain leading "
                f"dims; expand the members and stack them again for anything else."
            )
        new = dims[:lead]
        return self._rebuild([s.expand(*new, *s.shape) for s in self._members], self.dim + lead)

    def unsqueeze(self, dim: int) -> Self:
        """Inserts a singleton dim at ``dim`` in every member (the stack dim shifts)."""
        pos = _norm_dim(dim, self.ndim + 1, f"{type(self).__name__}.unsqueeze")
        if pos <= self.dim:
            return self._rebuild([s.unsqueeze(pos) for s in self._members], self.dim + 1)
        return self._rebuild([s.unsqueeze(pos - 1) for s in self._members], self.dim)

    def squeeze(self, dim: int | tuple[int, ...] | None = None) -> Any:
        """Removes singleton dims outside the stack dim; squeezing a stack of one gives its
        member.

        Raises:
            ValueError: ``dim`` names a dim whose size differs across members.
        """
        name = f"{type(self).__name__}.squeeze"
        if dim is None:
            dims = [i for i, s in enumerate(self.shape) if s == 1 and i != self.dim]
        else:
            given = dim if isinstance(dim, tuple | list) else (dim,)
            dims = sorted({_norm_dim(d, self.ndim, name) for d in given})
            if self.dim in dims:
                if len(self._members) != 1:
                    raise ValueError(
                        f"{name}: the stack dim {self.dim} has size {len(self._members)}, not 1."
                    )
                rest = tuple(d if d < self.dim else d - 1 for d in dims if d != self.dim)
                return self._members[0].squeeze(rest) if rest else self._members[0]
            if any(self.shape[d] == -1 for d in dims):
                raise ValueError(f"{name}: cannot squeeze a dim whose size differs across members.")
            dims = [d for d in dims if self.shape[d] == 1]
        member_dims = tuple(d if d < self.dim else d - 1 for d in dims)
        new_dim = self.dim - sum(d < self.dim for d in dims)
        members = [s.squeeze(member_dims) if member_dims else s for s in self._members]
        return self._rebuild(members, new_dim)

    def reshape(self, *shape: Any) -> TensorSpec:
        """Not defined for stacked specs: reshape the members and stack them again.

        Raises:
            ValueError: always, saying how to get the same result.
        """
        raise ValueError(
            f"{type(self).__name__}.reshape: a stack of specs of different shapes cannot be "
            f"reshaped. Reshape each spec of .specs and call stack_specs on the results."
        )

    def _index_member(self, index: Any) -> Any:
        """Index along the stack dim: ``spec[i]`` (dim 0) or ``spec[:, i]`` (dim 1)..."""
        name = f"{type(self).__name__}.__getitem__"
        idx = index if isinstance(index, tuple) else (index,)
        lead, rest = idx[: self.dim], idx[self.dim :]
        if any(i != slice(None) for i in lead) or len(rest) != 1:
            raise IndexError(
                f"{name}: only indexing along the stack dim {self.dim} is supported "
                f"(spec[{', '.join([':'] * self.dim + ['i'])}]), got {index!r}."
            )
        key = rest[0]
        if isinstance(key, int) and not isinstance(key, bool):
            if not -len(self._members) <= key < len(self._members):
                raise IndexError(
                    f"{name}: index {key} is out of range for a stack of {len(self._members)}."
                )
            return self._members[key]
        if isinstance(key, slice):
            members = self._members[key]
            if not members:
                raise IndexError(f"{name}: the slice {key!r} selects no member.")
            return members
        raise IndexError(f"{name}: expected an int or a slice along the stack dim, got {key!r}.")

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.dim == self.dim  # type: ignore[attr-defined]
            and len(other) == len(self)  # type: ignore[arg-type]
            and all(a == b for a, b in zip(self._members, other._members))  # type: ignore[attr-defined]
        )

    def __repr__(self) -> str:
        lines = ["    " + repr(s).replace("\n", "\n    ") + "," for s in self._members]
        tail = f"    shape={_fmt_shape(self.shape)}, dim={self.dim})"
        return f"{type(self).__name__}(\n" + "\n".join([*lines, tail])
