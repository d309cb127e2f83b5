"""The affine map shared by ObservationNorm and RewardScaling, on tensors and on numpy rows.

Both transforms map an entry ``x`` to ``(x - loc) / scale`` (``standard_normal``) or
``x * scale + loc``, with ``loc`` and ``scale`` kept as buffers. :func:`affine` is that map
for tensors and numpy arrays alike (two exactly rounded operations, the same bits in both),
:func:`affine_stats` gives loc and scale on a device (and their numpy arrays on the CPU)
without moving anything on a step, and :class:`AffinePlan` is the transforms' plan for the
numpy-row lane of a TransformedEnv (rl-core's speed folder, ``rl_core._accel.lane``; registered
through ``rl_core._accel.seam.register_lane_plan`` in ``_plans.py``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

_CPU = torch.device("cpu")
# The ufuncs of ``affine(..., out=)``, called with ``out`` positional (fewer argument checks).
_add, _subtract, _multiply, _divide = np.add, np.subtract, np.multiply, np.divide


def affine(
    value: Any, loc: Any, scale: Any, *, standard_normal: bool, out: np.ndarray | None = None
) -> Any:
    """``(value - loc) / scale`` with ``standard_normal``, else ``value * scale + loc``: two
    exactly rounded operations, which give the same bits on tensors and numpy arrays.

    With ``out`` (numpy arrays only, of the result's shape and dtype), the two operations
    write into ``out``, which is returned: the same operations without temporaries.
    """
    if out is None:
        return (value - loc) / scale if standard_normal else value * scale + loc
    if standard_normal:
        _divide(_subtract(value, loc, out), scale, out)
    else:
        _add(_multiply(value, scale, out), loc, out)
    return out


@functools.cache
def keeps_shape(shape: tuple[int, ...], *others: tuple[int, ...]) -> bool:
    """Whether ``others`` broadcast onto ``shape`` without enlarging it."""
    try:
        return np.broadcast_shapes(shape, *others) == shape
    except ValueError:
        return False


def affine_stats(owner: torch.nn.Module, device: torch.device) -> tuple[Any, Any, Any]:
    """``(loc, scale, numpy)`` of ``owner``'s ``loc`` and ``scale`` buffers: both on
    ``device``, and on the CPU, where both are float32 or both float64, the numpy arrays
    sharing their memory (else ``None``).

    Kept in ``owner.__dict__`` per (loc, scale, their versions, device), so that a step
    moves nothing; a buffer replaced or changed in place is read again. The caller checks
    that both buffers are set.
    """
    buffers = owner._buffers  # the buffers themselves, without nn.Module's attribute lookup
    loc, scale = buffers["loc"], buffers["scale"]
    cached = owner.__dict__.get("_stats_cache")
    if (
        cached is not None
        and cached[0] is loc
        and cached[1] is scale
        and cached[2] == loc._version
        and cached[3] == scale._version
        and cached[7] == device
    ):
        return cached[4], cached[5], cached[6]
    moved_loc, moved_scale = loc.to(device), scale.to(device)
    numpy = None
    if (
        moved_loc.device.type == "cpu"
        and moved_loc.dtype == moved_scale.dtype
        and moved_loc.dtype in (torch.float32, torch.float64)
    ):
        numpy = (moved_loc.numpy(), moved_scale.numpy())
    cached = (loc, scale, loc._version, scale._version, moved_loc, moved_scale, numpy, device)
    owner.__dict__["_stats_cache"] = cached
    return moved_loc, moved_scale, numpy


class AffinePlan:
    """The affine map of ``owner`` (a transform with ``loc`` and ``scale`` buffers read
    through its ``_stats(device)``, a ``standard_normal`` flag and root-level keys) on numpy
    rows: where every entry to map is a row of loc's dtype (float32 or float64, loc and scale
    on the CPU) that loc and scale do not enlarge, :func:`affine` on the numpy arrays (torch's
    bits) into fresh rows; else ``False``, having written nothing.

    Keys are read when the plan is built (like the env's specs, it is rebuilt when the
    transforms change through the env); ``standard_normal`` is read on every call, and so are
    loc and scale: through ``_stats``, as the torch path reads them, whenever a buffer was
    replaced or changed in place since the last call (the numpy arrays ``_stats`` gave are
    kept per buffer and version, as ``affine_stats`` keeps them).
    """

    def __init__(self, owner: Any, lane: Any, pairs: list[tuple[str, str]]) -> None:
        self.owner, self.numpy, self.lane = owner, lane.numpy, lane
        self.pairs = pairs  # (in_key, out_key), as affine_lane_plan checked them
        # loc, scale, their versions and numpy arrays as last read (none yet: False matches no
        # buffer, not even an unset one).
        self.stats: tuple = (False, False, -1, -1, None)
        # The rows of each (row shape, dtype, loc shape, scale shape) seen: a take()
        # callable, or False where loc or scale would enlarge the row or have another dtype.
        self.takes: dict[tuple, Any] = {}

    def _read_stats(self, loc: Any, scale: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """Reads the numpy arrays of ``loc`` and ``scale`` (the buffers) through
        ``_stats(cpu)`` and keeps them with the buffers' versions; ``None`` where a buffer is
        not set (the torch path raises) or they have no numpy arrays (another device, dtypes
        that differ)."""
        if loc is None or scale is None:
            return None
        numpy = self.owner._stats(_CPU)[2]
        self.stats = (loc, scale, loc._version, scale._version, numpy)
        return numpy

    def _take(self, key: tuple, row: np.ndarray, loc: np.ndarray, scale: np.ndarray) -> Any:
        """The rows for the map of ``row``, kept in ``takes`` under ``key`` (row shape, row
        dtype, loc shape, scale shape), which :meth:`step` reads first: a ``take()``
        callable, or ``False`` where loc or scale would enlarge ``row`` or have another
        dtype."""
        keeps = row.dtype == loc.dtype and keeps_shape(row.shape, loc.shape, scale.shape)
        take = self.takes[key] = self.lane.rows(row.shape, row.dtype) if keeps else False
        return take

    def step(self, root: dict | None, found: dict, next_tensordict: Any) -> bool:
        """Maps the entries of ``found`` (a step's next entries, or a reset's: see
        :meth:`reset`) into fresh rows; ``root`` is not read."""
        buffers, stats = self.owner._buffers, self.stats
        loc, scale = buffers["loc"], buffers["scale"]
        if (
            stats[0] is loc
            and stats[1] is scale
            and stats[2] == loc._version
            and stats[3] == scale._version
        ):
            numpy = stats[4]  # neither buffer replaced nor changed since they were read
        else:
            numpy = self._read_stats(loc, scale)
        if numpy is None:
            return False
        loc, scale = numpy
        lookup, rows = self.numpy, []
        for in_key, out_key in self.pairs:
            value = found.get(in_key)
            if value is None:
                continue
            row = lookup(value)
            if row is None:
                return False
            key = (row.shape, row.dtype, loc.shape, scale.shape)
            take = self.takes.get(key)
            if take is None:
                take = self._take(key, row, loc, scale)
            if take is False:
                return False
            rows.append((out_key, row, take))
        standard = self.owner.standard_normal
        for out_key, row, take in rows:
            out, dst = take()
            affine(row, loc, scale, standard_normal=standard, out=dst)
            found[out_key] = out
        return True

    def reset(self, fresh: dict, tensordict_reset: Any) -> bool:
        return self.step(None, fresh, tensordict_reset)


def affine_lane_plan(owner: Any, lane: Any, registered: type) -> AffinePlan | None:
    """``owner``'s lane plan: root-level keys, each output written under a key no later pair
    reads, and ``_stats`` as the ``registered`` class has it (else ``None``: the torch path
    keeps ``_call``'s order, and calls an overridden ``_stats`` every time)."""
    if type(owner)._stats is not registered._stats:
        return None  # the plan reads _stats only when a buffer changes: an override may not
    pairs = list(zip(owner.in_keys, owner.out_keys))
    if not all(type(i) is str and type(o) is str for i, o in pairs):
        return None
    if any(o != i and o in owner.in_keys for i, o in pairs):
        return None
    return AffinePlan(owner, lane, pairs)


__all__ = ["AffinePlan", "affine", "affine_lane_plan", "affine_stats", "keeps_shape"]
