"""Fused sum/min-tree ops for prioritized replay: one call per sample and per update.

A prioritized sampler keeps its priorities in a sum tree (for drawing) and a min tree (for
the importance weights), updates both with the same leaves, and draws with the weights in
the same step. These wrappers run each of those steps as one op, so an installed kernel
package (``rl-kernels``) does each in one pass, with no per-step Python between the trees.
They give exactly what the separate ops of :mod:`rl_buffers.trees.segment_tree` give.
"""

from __future__ import annotations

import torch
from torch import Tensor

import rl_core.ops  # noqa: F401  (declares the ops)
from rl_buffers.trees.segment_tree import _check_tree, _check_update
from rl_core.ops.kernel_packages import ensure_kernel_packages

__all__ = ["sum_min_tree_priority_update_", "sum_min_tree_update_", "sum_tree_sample"]


def _check_pair(where: str, sum_tree: Tensor, min_tree: Tensor) -> None:
    _check_tree(where, sum_tree)
    if (min_tree.shape, min_tree.dtype, min_tree.device) != (
        sum_tree.shape,
        sum_tree.dtype,
        sum_tree.device,
    ):
        raise ValueError(
            f"{where}: expected min_tree of shape {tuple(sum_tree.shape)}, {sum_tree.dtype} on "
            f"{sum_tree.device} like sum_tree, got {tuple(min_tree.shape)}, {min_tree.dtype} "
            f"on {min_tree.device}. Build both with the same capacity and dtype."
        )


def sum_min_tree_update_(
    sum_tree: Tensor, min_tree: Tensor, index: Tensor, value: Tensor | float
) -> tuple[Tensor, Tensor]:
    """Sets the same leaves of a sum tree and a min tree in place, in one op.

    The same as :func:`~rl_buffers.trees.sum_tree_update_` on ``sum_tree`` and
    :func:`~rl_buffers.trees.min_tree_update_` on ``min_tree`` (last write wins for a repeated
    leaf), bit for bit. Runs ``torch.ops.rl_core.sum_min_tree_update_``.

    Args:
        sum_tree: a sum tree from :func:`~rl_buffers.trees.make_sum_tree`; modified in place.
        min_tree: a min tree of the same capacity, dtype and device; modified in place.
        index: int64 ``[K]`` leaf numbers in ``[0, capacity)``.
        value: ``[K]`` priorities or one scalar for all; cast to the trees' dtype and
            detached.

    Returns:
        ``(sum_tree, min_tree)``.

    Raises:
        ValueError: shapes or devices are wrong, the trees differ, or an index is outside
            ``[0, capacity)`` (then neither tree changes).
        TypeError: ``index`` is not int64 or the trees are not floating point.

    Examples:
        >>> import torch
        >>> from rl_buffers.trees import make_min_tree, make_sum_tree, sum_min_tree_update_
        >>> sums, mins = sum_min_tree_update_(
        ...     make_sum_tree(4), make_min_tree(4), torch.tensor([0, 3]), torch.tensor([2.0, 0.5])
        ... )
        >>> float(sums[1]), float(mins[1])
        (2.5, 0.5)
    """
    where = "sum_min_tree_update_"
    value = _check_update(where, sum_tree, index, value)
    _check_pair(where, sum_tree, min_tree)
    ensure_kernel_packages()
    torch.ops.rl_core.sum_min_tree_update_(sum_tree, min_tree, index.contiguous(), value)
    return sum_tree, min_tree


def sum_tree_sample(
    sum_tree: Tensor, min_tree: Tensor, uniform: Tensor, beta: float
) -> tuple[Tensor, Tensor]:
    """Draws leaves in proportion to their priorities, with their importance weights.

    ``index = sum_tree_find_prefixsum(sum_tree, uniform * total)`` (``total`` the root of
    ``sum_tree``): a ``uniform`` drawn from ``[0, 1)`` picks leaf ``i`` with probability
    ``leaf[i] / total`` and never a zero leaf. ``weight = (leaf[index] / smallest) ** -beta``
    with ``smallest`` the root of ``min_tree``: the importance weights of prioritized
    replay, at most 1 when the min tree holds the same leaves. Runs
    ``torch.ops.rl_core.sum_tree_sample``.

    Args:
        sum_tree: a sum tree from :func:`~rl_buffers.trees.make_sum_tree`.
        min_tree: the min tree over the same leaves (same capacity, dtype and device).
        uniform: draws in ``[0, 1)`` of any shape (e.g. ``torch.rand(batch)``); cast to the
            trees' dtype.
        beta: importance-sampling exponent, >= 0 (0: all weights 1).

    Returns:
        ``(index, weight)``: int64 leaf numbers and weights in the trees' dtype, shaped like
        ``uniform``.

    Raises:
        ValueError: the trees are malformed or differ, ``uniform`` is on another device, or
            ``beta`` is negative.

    Examples:
        >>> import torch
        >>> from rl_buffers.trees import make_min_tree, make_sum_tree, sum_min_tree_update_
        >>> from rl_buffers.trees import sum_tree_sample
        >>> sums, mins = sum_min_tree_update_(
        ...     make_sum_tree(4), make_min_tree(4), torch.arange(4), torch.tensor([1.0, 0.5, 2, 1])
        ... )
        >>> index, weight = sum_tree_sample(sums, mins, torch.tensor([0.1, 0.5, 0.9]), beta=1.0)
        >>> index.tolist(), weight.tolist()
        ([0, 2, 3], [0.5, 0.25, 0.5])
    """
    where = "sum_tree_sample"
    _check_pair(where, sum_tree, min_tree)
    if uniform.device != sum_tree.device:
        raise ValueError(
            f"{where}: expected uniform on {sum_tree.device} like the trees, got {uniform.device}."
        )
    if isinstance(beta, bool) or not isinstance(beta, int | float) or not beta >= 0:
        raise ValueError(f"{where}: expected beta to be a float >= 0, got {beta!r}.")
    flat = uniform.detach() if uniform.requires_grad else uniform
    flat = flat if flat.dtype == sum_tree.dtype else flat.to(sum_tree.dtype)
    flat = flat if flat.dim() == 1 and flat.is_contiguous() else flat.reshape(-1).contiguous()
    ensure_kernel_packages()
    index, weight = torch.ops.rl_core.sum_tree_sample(sum_tree, min_tree, flat, float(beta))
    if uniform.dim() == 1:
        return index, weight
    return index.reshape(uniform.shape), weight.reshape(uniform.shape)


def sum_min_tree_priority_update_(
    sum_tree: Tensor,
    min_tree: Tensor,
    max_value: Tensor,
    index: Tensor,
    priority: Tensor,
    *,
    eps: float,
    alpha: float,
    max_index: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Writes raw priorities into a sum tree and a min tree, checks included, in one op.

    What a prioritized sampler's ``update_priority`` does: checks that every index lies in
    ``[0, max_index)`` and every priority is ``>= 0`` (no NaN) before writing anything,
    writes ``value = (priority + eps) ** alpha`` at leaves ``index`` of both trees (as
    :func:`sum_min_tree_update_`, bit for bit) and raises ``max_value`` to the largest
    written value. Runs ``torch.ops.rl_core.sum_min_tree_priority_update_``.

    Args:
        sum_tree: a sum tree from :func:`~rl_buffers.trees.make_sum_tree`; modified in place.
        min_tree: the min tree of the same capacity, dtype and device; modified in place.
        max_value: one element in the trees' dtype, on their device: the running maximum
            of the written values (e.g. ``torch.ones(1)``); modified in place.
        index: int64 ``[K]`` leaf numbers.
        priority: ``[K]`` raw priorities in the trees' dtype (e.g. ``|td_error|``).

    Keyword Args:
        eps: added to every priority.
        alpha: the priority exponent.
        max_index: the number of usable leaves (a buffer's ``max_size``). Defaults to the
            trees' capacity.

    Returns:
        ``(sum_tree, min_tree)``.

    Raises:
        IndexError: an index is outside ``[0, max_index)``; nothing is written.
        ValueError: a priority is negative or NaN (nothing is written), or shapes, dtypes
            or devices are wrong.

    Examples:
        >>> import torch
        >>> from rl_buffers.trees import make_min_tree, make_sum_tree, sum_min_tree_priority_update_
        >>> sums, mins, top = make_sum_tree(4), make_min_tree(4), torch.ones(1)
        >>> _ = sum_min_tree_priority_update_(
        ...     sums, mins, top, torch.tensor([0, 3]), torch.tensor([3.0, 0.0]), eps=1.0, alpha=2.0
        ... )
        >>> float(sums[1]), float(mins[1]), float(top)
        (17.0, 1.0, 16.0)
    """
    where = "sum_min_tree_priority_update_"
    _check_pair(where, sum_tree, min_tree)
    capacity = sum_tree.shape[0] // 2
    max_index = capacity if max_index is None else max_index
    if isinstance(max_index, bool) or not isinstance(max_index, int):
        raise ValueError(f"{where}: expected max_index to be an int, got {max_index!r}.")
    for name, tensor in (("index", index), ("priority", priority), ("max_value", max_value)):
        if not isinstance(tensor, Tensor) or tensor.device != sum_tree.device:
            raise ValueError(
                f"{where}: expected {name} to be a tensor on {sum_tree.device} like the trees, "
                f"got {getattr(tensor, 'device', type(tensor).__name__)}."
            )
    if index.dtype != torch.int64 or index.dim() != 1 or priority.shape != index.shape:
        raise ValueError(
            f"{where}: expected int64 index of shape [K] and priority of the same shape, got "
            f"{index.dtype} {tuple(index.shape)} and {tuple(priority.shape)}."
        )
    if priority.dtype != sum_tree.dtype or max_value.dtype != sum_tree.dtype:
        raise ValueError(
            f"{where}: expected priority and max_value in the trees' {sum_tree.dtype}, got "
            f"{priority.dtype} and {max_value.dtype}."
        )
    ensure_kernel_packages()
    torch.ops.rl_core.sum_min_tree_priority_update_(
        sum_tree,
        min_tree,
        max_value,
        index.contiguous(),
        priority.detach(),
        float(eps),
        float(alpha),
        max_index,
    )
    return sum_tree, min_tree
