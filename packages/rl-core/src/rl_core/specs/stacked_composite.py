"""StackedComposite (Composites with different keys or shapes, stacked) and stack_specs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensordict import LazyStackedTensorDict, TensorDictBase

from rl_core.keys import NestedKey
from rl_core.specs._base import _STACK_HOOK, TensorSpec, _fmt_shape, _norm_dim
from rl_core.specs._stacking import _StackBase
from rl_core.specs._tree import _as_path, _is_key, _show
from rl_core.specs.composite import Composite
from rl_core.specs.stacked import Stacked


class StackedComposite(_StackBase):
    """Composites stacked along a batch dim: heterogeneous agent groups, one Composite each.

    Build it with :func:`stack_specs`. Values are ``LazyStackedTensorDict`` objects, so each
    slice keeps its own keys and shapes. ``spec[key]`` stacks the members' entries at
    ``key`` (a plain spec when they are all equal), ``spec[i]`` is the i-th Composite, and
    :meth:`keys` lists the keys every member has.

    Args:
        *specs: the Composites, all with the same number of batch dims; a single list is
            accepted too.
        dim: the batch dim to stack along. Defaults to ``0``.

    Raises:
        TypeError: a member is not a Composite.
        ValueError: no specs, different batch ndims, or ``dim`` out of range.

    Examples:
        >>> import torch
        >>> from rl_core.specs import Bounded, Composite, Unbounded, stack_specs
        >>> walker = Composite(obs=Unbounded(shape=(3,)), legs=Bounded(-1.0, 1.0, shape=(2,)))
        >>> flyer = Composite(obs=Unbounded(shape=(5,)))
        >>> spec = stack_specs([walker, flyer])
        >>> type(spec).__name__, spec.shape, spec.keys()
        ('StackedComposite', torch.Size([2]), ['obs'])
        >>> td = spec.rand()
        >>> type(td).__name__, td[0]["obs"].shape, td[1]["obs"].shape
        ('LazyStackedTensorDict', torch.Size([3]), torch.Size([5]))
        >>> spec.is_in(td), spec["obs"].shape
        (True, torch.Size([2, -1]))
    """

    def _check_member(self, spec: Any, i: int) -> None:
        if not isinstance(spec, Composite):
            raise TypeError(
                f"StackedComposite: expected Composites (use Stacked for leaf specs), got a "
                f"{type(spec).__name__} at position {i}."
            )

    def _stackable_ndim(self, spec: TensorSpec) -> int:
        return spec.ndim

    def _stack_values(self, values: list[Any], dim: int) -> LazyStackedTensorDict:
        return LazyStackedTensorDict.lazy_stack(values, dim)

    def _split_value(self, value: Any) -> list[Any] | str:
        n = len(self.specs)
        if not isinstance(value, TensorDictBase):
            return f"is a {type(value).__name__}, expected a TensorDict"
        size = value.batch_size
        if len(size) <= self.dim or size[self.dim] != n:
            return (
                f"has batch size {_fmt_shape(size)}, expected {n} slices along dim {self.dim} "
                f"(shape {_fmt_shape(self.shape)})"
            )
        return list(value.unbind(self.dim))

    def keys(self, include_nested: bool = False, leaves_only: bool = False) -> list[NestedKey]:
        """The keys that every member has, in the first member's order (flags as in
        :meth:`Composite.keys`)."""
        first, *others = self.specs
        others_keys = [set(o.keys(include_nested, leaves_only)) for o in others]  # type: ignore[attr-defined]
        return [
            k
            for k in first.keys(include_nested, leaves_only)  # type: ignore[attr-defined]
            if all(k in ks for ks in others_keys)
        ]

    def __contains__(self, key: object) -> bool:
        return _is_key(key) and all(key in s for s in self.specs)  # type: ignore[operator]

    def __getitem__(self, index: Any) -> Any:
        """A key stacks the members' entries; an index along the stack dim picks members.

        Raises:
            KeyError: a member lacks the key.
            IndexError: the index does not select along the stack dim only.
        """
        if _is_key(index):
            path = _as_path(index, "StackedComposite.__getitem__")
            entries = []
            for i, member in enumerate(self.specs):
                entry = member.get(path, None)  # type: ignore[attr-defined]
                if entry is None:
                    raise KeyError(
                        f"StackedComposite: member {i} has no entry at key {_show(path)}; "
                        f"the keys every member has are {self.keys(include_nested=True)}."
                    )
                entries.append(entry)
            return stack_specs(entries, self.dim)
        out = self._index_member(index)
        return self._rebuild(out, self.dim) if isinstance(out, tuple) else out


def stack_specs(specs: Sequence[TensorSpec], dim: int = 0) -> TensorSpec:
    """Stacks specs along a new dim ``dim``.

    When all the specs are equal the result is the plain spec with ``len(specs)`` inserted
    at ``dim`` (``spec.unsqueeze(dim).expand(...)``); otherwise a :class:`Stacked` (leaf
    specs) or a :class:`StackedComposite` (Composites).

    Args:
        specs: the specs to stack, all of the same number of dims.
        dim: the position of the new dim. Defaults to ``0``.

    Returns:
        The stacked spec.

    Raises:
        TypeError: ``specs`` is empty-handed, or mixes Composites and leaf specs.
        ValueError: the specs cannot be stacked at ``dim``.

    Examples:
        >>> import torch
        >>> from rl_core.specs import Bounded, stack_specs
        >>> same = stack_specs([Bounded(-1.0, 1.0, shape=(3,))] * 4)
        >>> type(same).__name__, same.shape
        ('Bounded', torch.Size([4, 3]))
        >>> mixed = stack_specs([Bounded(-1.0, 1.0, shape=(3,)), Bounded(0.0, 2.0, shape=(3,))])
        >>> type(mixed).__name__, mixed.rand().shape
        ('Stacked', torch.Size([2, 3]))
    """
    if not isinstance(specs, Sequence) or not specs:
        raise TypeError(f"stack_specs: expected a non-empty list of specs, got {specs!r}.")
    specs = list(specs)
    for i, s in enumerate(specs):
        if not isinstance(s, TensorSpec):
            raise TypeError(
                f"stack_specs: expected TensorSpecs, got a {type(s).__name__} at position {i}."
            )
    composites = [isinstance(s, Composite | StackedComposite) for s in specs]
    if any(composites) and not all(composites):
        raise TypeError(
            "stack_specs: cannot stack Composites with leaf specs; stack each kind separately."
        )
    first = specs[0]
    if all(s == first for s in specs[1:]) and -1 not in first.shape:
        pos = _norm_dim(dim, first.ndim + 1, "stack_specs")
        new = (*first.shape[:pos], len(specs), *first.shape[pos:])
        return first.unsqueeze(pos).expand(*new)
    if composites[0]:
        return StackedComposite(*specs, dim=dim)
    return Stacked(*specs, dim=dim)


def _torch_stack(specs: Any, dim: int = 0, *, out: Any = None) -> TensorSpec:
    """``torch.stack`` on specs: checks the arguments, then :func:`stack_specs`."""
    if out is not None:
        raise TypeError("torch.stack: specs are immutable values; expected out=None, got a value.")
    if not isinstance(specs, Sequence) or isinstance(specs, str) or not specs:
        raise TypeError(f"torch.stack: expected a non-empty list of specs, got {specs!r}.")
    for i, spec in enumerate(specs):
        if not isinstance(spec, TensorSpec):
            raise TypeError(
                f"torch.stack: cannot stack a spec with a {type(spec).__name__} (position {i}); "
                f"expected only TensorSpecs."
            )
    return stack_specs(list(specs), dim)


_STACK_HOOK["stack"] = _torch_stack
