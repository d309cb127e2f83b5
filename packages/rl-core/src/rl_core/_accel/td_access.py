"""Per-step TensorDict access for sibling packages: public tensordict results, fewer checks.

Speed-only code, private to the stack: sibling packages import it (and :mod:`rl_core._accel.seam`)
as the two sibling-facing modules of rl-core's speed folder; it changes with rl-core's minor
version, which every sibling pins.

Env wrappers, batched envs, storages and writers move the same few entries in and out of
TensorDicts on every step. This module is the narrow, public part of rl-core's fast access:
each function returns what the public tensordict call it names returns (the tests compare
them call by call), skips the validation that is known to hold, and hands out no tensordict
internals: :func:`entries_view` is a read-only view, :func:`build_tensordict` copies the dict
it is given, and writes go through :func:`set_leaf`, which stores what ``td.set`` stores.

A *plain* TensorDict is an instance of ``TensorDict`` itself (not a lazy stack, a tensorclass
or a subclass). Where a function needs one it says so; the others fall back to the public call
for anything else.

==========================================  ==============================================
here                                        the public tensordict call it equals
==========================================  ==============================================
``is_plain(td)``                            ``type(td) is TensorDict``
``entries_view(td)``                        ``dict(td.items())``, read-only (plain ``td``)
``get_leaf(td, path)``                      ``td.get(path)``
``get_leaf(td, path, default)``             ``td.get(path, default)``
``set_leaf(td, key, value)``                ``td.set(key, value)``
``leaf_paths(td)``                          ``[k for k in td.keys(True, True)]`` as tuples
                                            (plain tensors in plain levels, else ``None``)
``build_tensordict(source, size, device)``  ``TensorDict(source, size, device)`` for
                                            values already known to fit
``TreeBuilder(paths).build(values, ...)``   ``TensorDict`` with ``values[i]`` at
                                            ``paths[i]``, for values known to fit
==========================================  ==============================================

Examples:
    >>> import torch
    >>> from rl_core._accel.td_access import TreeBuilder, entries_view, get_leaf, leaf_paths
    >>> builder = TreeBuilder([("obs",), ("next", "obs")])
    >>> td = builder.build([torch.zeros(4, 3), torch.ones(4, 3)], torch.Size([4]), None)
    >>> leaf_paths(td)
    [('obs',), ('next', 'obs')]
    >>> get_leaf(td, ("next", "obs")).shape
    torch.Size([4, 3])
    >>> sorted(entries_view(td))
    ['next', 'obs']
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import torch
from tensordict import TensorDict

from rl_core._accel import fast_td
from rl_core._accel.fast_td import TreeBuilder, get_leaf, is_plain, leaf_paths, set_leaf

Path = tuple[str, ...]


def entries_view(td: TensorDict) -> Mapping[str, Any]:
    """A read-only view of one level of a plain TensorDict: names to tensors or sub-TensorDicts.

    Equal to ``dict(td.items())`` (same names, same order, the same tensor and sub-TensorDict
    objects), without the copy, and live: it shows entries set later. Nothing can be written
    through it (a ``types.MappingProxyType``); write with :func:`set_leaf` or ``td.set``.

    Args:
        td: a plain TensorDict (see :func:`is_plain`).

    Raises:
        TypeError: ``td`` is not a plain TensorDict.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> view = entries_view(TensorDict({"a": torch.zeros(2), "b": {"c": torch.ones(2)}}, [2]))
        >>> sorted(view), type(view["b"]).__name__
        (['a', 'b'], 'TensorDict')
    """
    if type(td) is not TensorDict:
        raise TypeError(
            f"entries_view: expected a plain TensorDict, got {type(td).__name__}. Check "
            f"is_plain(td) first, or use td.items()."
        )
    return MappingProxyType(fast_td.entries(td))


def build_tensordict(
    source: Mapping[str, Any], batch_size: torch.Size, device: torch.device | None = None
) -> TensorDict:
    """``TensorDict(source, batch_size=batch_size, device=device)`` for values known to fit,
    built without the constructor's checks.

    The caller guarantees what the constructor would check: string keys and values that are
    tensors or TensorDicts whose leading dims are ``batch_size``, on ``device`` when it is set.
    ``source`` is copied (one level): changing it afterwards does not change the TensorDict.

    Args:
        source: the entries of the root level.
        batch_size: a ``torch.Size``.
        device: the TensorDict's device, or ``None``.

    Examples:
        >>> import torch
        >>> build_tensordict({"a": torch.zeros(2, 3)}, torch.Size([2])).batch_size
        torch.Size([2])
    """
    return fast_td.build_tensordict(dict(source), batch_size, device)


__all__ = [
    "Path",
    "TreeBuilder",
    "build_tensordict",
    "entries_view",
    "get_leaf",
    "is_plain",
    "leaf_paths",
    "set_leaf",
]
