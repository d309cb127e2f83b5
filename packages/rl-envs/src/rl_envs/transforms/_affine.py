"""The affine map shared by ObservationNorm and RewardScaling, on tensors and on numpy rows.

Both transforms map an entry ``x`` to ``(x - loc) / scale`` (``standard_normal``) or
``x * scale + loc``, with ``loc`` and ``scale`` kept as buffers. :func:`affine` is that map
for tensors and numpy arrays alike (two exactly rounded operations, the same bits in both),
:func:`affine_stats` gives loc and scale on a device (and their numpy arrays on the CPU)
without moving anything on a step, and :class:`AffinePlan` is the transforms' plan for the
numpy-row lane of a TransformedEnv (``rl_core.transforms._lane``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

_CPU = torch.device("cpu")


def affine(value: Any, loc: Any, scale: Any, *, standard_normal: bool) -> Any:
    """``(value - loc) / scale`` with ``standard_normal``, else ``value * scale + loc``: two
    exactly rounded operations, which give the same bits on tensors and numpy arrays."""
    return (value - loc) / scale if standard_normal else value * scale + loc


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
    rows: where every entry to map
    is a row of loc's dtype (float32 or float64, loc and scale on the CPU) that loc and scale
    do not enlarge, :func:`affine` on the numpy arrays (torch's bits) into fresh rows; else
    ``False``, having written nothing. Keys are read when the plan is built (like the env's
    specs, it is rebuilt when the transforms change through the env); loc, scale (through
    ``_stats``, as the torch path reads them) and ``standard_normal`` are read on every
    call."""

    def __init__(self, owner: Any, lane: Any, pairs: list[tuple[str, str]]) -> None:
        self.owner, self.numpy, self.lane = owner, lane.numpy, lane
        self.pairs = pairs  # (in_key, out_key), as affine_lane_plan checked them
        self.takes: dict[tuple, Any] = {}

    def _take(self, row: np.ndarray, loc: np.ndarray, scale: np.ndarray) -> Any:
        key = (row.shape, row.dtype)
        take = self.takes.get(key)
        if take is None:
            keeps = row.dtype == loc.dtype and keeps_shape(row.shape, loc.shape, scale.shape)
            take = self.takes[key] = self.lane.rows(row.shape, row.dtype) if keeps else False
        return take

    def _map(self, found: dict) -> bool:
        owner = self.owner
        if owner._buffers["loc"] is None or owner._buffers["scale"] is None:
            return False  # the torch path raises the error
        numpy = owner._stats(_CPU)[2]  # checked against loc's and scale's versions
        if numpy is None:
            return False
        loc, scale = numpy
        numpy, rows = self.numpy, []
        for in_key, out_key in self.pairs:
            value = found.get(in_key)
            if value is None:
                continue
            row = numpy(value)
            if row is None or row.dtype != loc.dtype:
                return False
            take = self._take(row, loc, scale)
            if take is False:
                return False
            rows.append((out_key, row, take))
        standard = owner.standard_normal
        for out_key, row, take in rows:
            out, dst = take()
            dst[...] = affine(row, loc, scale, standard_normal=standard)
            found[out_key] = out
        return True

    def step(self, root: dict, nxt: dict, next_tensordict: Any) -> bool:
        return self._map(nxt)

    def reset(self, fresh: dict, tensordict_reset: Any) -> bool:
        return self._map(fresh)


def affine_lane_plan(owner: Any, lane: Any) -> AffinePlan | None:
    """``owner``'s lane plan: root-level keys, each output written under a key no later pair
    reads (else ``None``: the torch path keeps ``_call``'s order)."""
    pairs = list(zip(owner.in_keys, owner.out_keys))
    if not all(type(i) is str and type(o) is str for i, o in pairs):
        return None
    if any(o != i and o in owner.in_keys for i, o in pairs):
        return None
    return AffinePlan(owner, lane, pairs)


__all__ = ["AffinePlan", "affine", "affine_lane_plan", "affine_stats", "keeps_shape"]
