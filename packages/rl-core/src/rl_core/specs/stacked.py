"""Stacked: leaf specs of different shapes (or bounds) stacked along a dim."""

from __future__ import annotations

from typing import Any

import torch

from rl_core.specs._base import TensorSpec, _fmt_shape
from rl_core.specs._stacking import _StackBase
from rl_core.specs._tree import _SpecTree


class Stacked(_StackBase):
    """Leaf specs stacked along ``dim``: heterogeneous agents, one spec each.

    Build it with :func:`stack_specs`, which returns a plain expanded spec when all the
    specs are equal. ``shape`` has ``len(specs)`` at ``dim`` and ``-1`` where the members'
    dims differ. Values are dense tensors when every member has the same shape and dtype
    (e.g. agents with different bounds), and otherwise a list with one value per member.

    Args:
        *specs: the leaf specs (not Composites), all with the same number of dims; a single
            list is accepted too.
        dim: where the stack dim goes, within the members' batch dims. Defaults to ``0``.

    Raises:
        TypeError: a member is not a leaf spec.
        ValueError: no specs, different numbers of dims, or ``dim`` out of range.

    Examples:
        >>> import torch
        >>> from rl_core.specs import OneHot, stack_specs
        >>> spec = stack_specs([OneHot(3), OneHot(5)])
        >>> spec.shape
        torch.Size([2, -1])
        >>> [v.shape for v in spec.rand()]
        [torch.Size([3]), torch.Size([5])]
        >>> spec.is_in(spec.rand()), spec[1]
        (True, OneHot(shape=(5,), dtype=bool, n=5))
    """

    def _check_member(self, spec: Any, i: int) -> None:
        if not isinstance(spec, TensorSpec) or isinstance(spec, _SpecTree | _StackBase):
            raise TypeError(
                f"Stacked: expected leaf specs (use StackedComposite for Composites), got a "
                f"{type(spec).__name__} at position {i}."
            )

    def _stack_values(self, values: list[Any], dim: int) -> Any:
        if all(isinstance(v, torch.Tensor) for v in values) and (
            len({(v.shape, v.dtype) for v in values}) == 1
        ):
            return torch.stack(values, dim)
        return values

    def _split_value(self, value: Any) -> list[Any] | str:
        n = len(self.specs)
        if isinstance(value, torch.Tensor):
            if value.ndim <= self.dim or value.shape[self.dim] != n:
                return (
                    f"has shape {_fmt_shape(value.shape)}, expected {n} slices along dim "
                    f"{self.dim} (shape {_fmt_shape(self.shape)})"
                )
            return list(value.unbind(self.dim))
        if isinstance(value, list | tuple):
            if len(value) != n:
                return f"is a {type(value).__name__} of {len(value)} values, expected {n}"
            return list(value)
        return f"is a {type(value).__name__}, expected a tensor or a list of {n} tensors"

    def __getitem__(self, index: Any) -> Any:
        """``spec[i]`` is the i-th member (``spec[:, i]`` for a stack at dim 1); a slice
        gives the stack of those members.

        Raises:
            IndexError: the index does not select along the stack dim only.
        """
        out = self._index_member(index)
        return self._rebuild(out, self.dim) if isinstance(out, tuple) else out
