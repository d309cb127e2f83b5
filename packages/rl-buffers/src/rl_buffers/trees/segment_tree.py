"""Sum and min segment trees stored in flat tensors, for prioritized replay.

A tree over ``capacity`` leaves (a power of two) is a 1-D tensor of size ``2 * capacity``:
leaf ``i`` sits at index ``capacity + i``, node ``j`` combines nodes ``2j`` and ``2j + 1``,
the root is index 1 and index 0 is unused. A sum tree's root is the total priority; a min
tree's root is the smallest priority (empty leaves hold ``+inf``). The functions here check
their arguments and call the ``rl_core`` ops (``torch.ops.rl_core.*``, whose schemas and
reference kernels live in :mod:`rl_core.ops`), so a kernel registered by ``rl-kernels``
runs the updates and prefix-sum searches when installed. Reading the root needs no op:
:func:`sum_tree_total` and :func:`min_tree_min` return ``tree[1]``, which every backend and
``torch.compile`` handle as they are.
"""

from __future__ import annotations

import torch
from torch import Tensor

import rl_core.ops  # noqa: F401  (declares the ops)
from rl_core.ops.kernel_packages import ensure_kernel_packages

__all__ = [
    "segment_tree_capacity",
    "make_sum_tree",
    "make_min_tree",
    "sum_tree_update_",
    "min_tree_update_",
    "sum_tree_find_prefixsum",
    "sum_tree_total",
    "min_tree_min",
]


def segment_tree_capacity(size: int) -> int:
    """The smallest power of two that holds ``size`` leaves.

    Args:
        size: number of items to store, >= 1.

    Returns:
        The tree capacity, a power of two >= ``size``.

    Raises:
        ValueError: ``size`` is smaller than 1.

    Examples:
        >>> from rl_buffers.trees import segment_tree_capacity
        >>> segment_tree_capacity(1000), segment_tree_capacity(1024), segment_tree_capacity(1)
        (1024, 1024, 1)
    """
    if size < 1:
        raise ValueError(f"segment_tree_capacity: expected size >= 1, got {size}.")
    return 1 << (size - 1).bit_length()


def _checked_capacity(where: str, capacity: int) -> int:
    if capacity < 1 or capacity & (capacity - 1):
        raise ValueError(
            f"{where}: expected capacity to be a power of two >= 1, got {capacity}. "
            f"Use segment_tree_capacity({capacity}) to round it up."
        )
    return capacity


def make_sum_tree(
    capacity: int,
    dtype: torch.dtype | None = None,
    *,
    device: torch.device | str | None = None,
) -> Tensor:
    """An empty sum tree (all zeros) over ``capacity`` leaves.

    Args:
        capacity: number of leaves, a power of two (see :func:`segment_tree_capacity`).
        dtype: floating dtype of the priorities. Defaults to torch's default dtype.

    Keyword Args:
        device: where the tree lives. Defaults to torch's default device.

    Returns:
        A 1-D tensor of size ``2 * capacity``.

    Raises:
        ValueError: ``capacity`` is not a power of two.

    Examples:
        >>> from rl_buffers.trees import make_sum_tree
        >>> make_sum_tree(4).shape
        torch.Size([8])
    """
    _checked_capacity("make_sum_tree", capacity)
    return torch.zeros(2 * capacity, dtype=dtype, device=device)


def make_min_tree(
    capacity: int,
    dtype: torch.dtype | None = None,
    *,
    device: torch.device | str | None = None,
) -> Tensor:
    """An empty min tree (all ``+inf``) over ``capacity`` leaves.

    Args:
        capacity: number of leaves, a power of two (see :func:`segment_tree_capacity`).
        dtype: floating dtype of the priorities. Defaults to torch's default dtype.

    Keyword Args:
        device: where the tree lives. Defaults to torch's default device.

    Returns:
        A 1-D tensor of size ``2 * capacity``.

    Raises:
        ValueError: ``capacity`` is not a power of two.

    Examples:
        >>> from rl_buffers.trees import make_min_tree, min_tree_min
        >>> float(min_tree_min(make_min_tree(4)))
        inf
    """
    _checked_capacity("make_min_tree", capacity)
    return torch.full((2 * capacity,), float("inf"), dtype=dtype, device=device)


def _check_tree(where: str, tree: Tensor) -> int:
    size = tree.shape[0] if tree.dim() == 1 else 0
    if size < 2 or size & (size - 1):
        raise ValueError(
            f"{where}: expected a 1-D tree of size 2 * capacity with capacity a power of two, "
            f"got shape {tuple(tree.shape)}. Build it with make_sum_tree or make_min_tree."
        )
    if not tree.is_floating_point():
        raise TypeError(
            f"{where}: expected a floating-point tree, got {tree.dtype}. Build it with "
            f"make_sum_tree or make_min_tree."
        )
    return size // 2


def _check_update(where: str, tree: Tensor, index: Tensor, value: Tensor | float) -> Tensor:
    _check_tree(where, tree)
    if index.dim() != 1:
        raise ValueError(
            f"{where}: expected a 1-D index, got shape {tuple(index.shape)}. "
            f"Flatten it with index.reshape(-1)."
        )
    if index.dtype != torch.int64:
        raise TypeError(
            f"{where}: expected an int64 index, got {index.dtype}. Convert it with index.long()."
        )
    if index.device != tree.device:
        raise ValueError(
            f"{where}: expected index on {tree.device} like the tree, got {index.device}."
        )
    value = torch.as_tensor(value, dtype=tree.dtype, device=tree.device).detach()
    if value.dim() == 0:
        return value.expand(index.shape).contiguous()
    if value.shape != index.shape:
        raise ValueError(
            f"{where}: expected value of shape {tuple(index.shape)} like index, got "
            f"{tuple(value.shape)}. Pass one value per index (or a scalar)."
        )
    return value.contiguous()


def sum_tree_update_(tree: Tensor, index: Tensor, value: Tensor | float) -> Tensor:
    """Sets leaf priorities of a sum tree in place and refreshes the sums above them.

    When ``index`` repeats a leaf, the value at its last position is kept (last write wins),
    as if the writes happened one after the other. Runs
    ``torch.ops.rl_core.sum_tree_update_``.

    Args:
        tree: a sum tree from :func:`make_sum_tree`; modified in place.
        index: int64 ``[K]`` leaf numbers in ``[0, capacity)``.
        value: ``[K]`` priorities (>= 0) or one scalar for all; cast to the tree's dtype
            and detached (priorities carry no gradient).

    Returns:
        ``tree``, for chaining.

    Raises:
        ValueError: shapes or devices are wrong, or an index is outside ``[0, capacity)``
            (checked by the kernel, after a device sync on GPU).
        TypeError: ``index`` is not int64 or the tree is not floating point.

    Examples:
        >>> import torch
        >>> from rl_buffers.trees import make_sum_tree, sum_tree_total, sum_tree_update_
        >>> tree = make_sum_tree(4)
        >>> _ = sum_tree_update_(tree, torch.tensor([0, 2, 0]), torch.tensor([1.0, 2.0, 3.0]))
        >>> tree[4:].tolist(), float(sum_tree_total(tree))
        ([3.0, 0.0, 2.0, 0.0], 5.0)
    """
    value = _check_update("sum_tree_update_", tree, index, value)
    ensure_kernel_packages()
    torch.ops.rl_core.sum_tree_update_(tree, index.contiguous(), value)
    return tree


def min_tree_update_(tree: Tensor, index: Tensor, value: Tensor | float) -> Tensor:
    """Sets leaf priorities of a min tree in place and refreshes the minima above them.

    Same duplicate rule as :func:`sum_tree_update_` (last write wins). Runs
    ``torch.ops.rl_core.min_tree_update_``.

    Args:
        tree: a min tree from :func:`make_min_tree`; modified in place.
        index: int64 ``[K]`` leaf numbers in ``[0, capacity)``.
        value: ``[K]`` priorities or one scalar for all; cast to the tree's dtype.

    Returns:
        ``tree``, for chaining.

    Raises:
        ValueError: shapes or devices are wrong, or an index is outside ``[0, capacity)``.
        TypeError: ``index`` is not int64 or the tree is not floating point.

    Examples:
        >>> import torch
        >>> from rl_buffers.trees import make_min_tree, min_tree_min, min_tree_update_
        >>> tree = min_tree_update_(make_min_tree(4), torch.tensor([1, 3]), torch.tensor([2.0, 0.5]))
        >>> float(min_tree_min(tree))
        0.5
    """
    value = _check_update("min_tree_update_", tree, index, value)
    ensure_kernel_packages()
    torch.ops.rl_core.min_tree_update_(tree, index.contiguous(), value)
    return tree


def sum_tree_find_prefixsum(tree: Tensor, value: Tensor) -> Tensor:
    """Finds, for each query ``v``, the first leaf where the running sum exceeds ``v``.

    Returns the smallest leaf ``i`` with ``leaf[0] + ... + leaf[i] > v``, so a ``v`` drawn
    uniformly from ``[0, total)`` picks leaf ``i`` with probability ``leaf[i] / total`` and
    never picks a zero-priority leaf. Queries below 0 count as 0; a query at or above the
    total returns the last leaf with a non-zero priority (also the guard against rounding);
    an all-zero tree returns leaf 0. Runs ``torch.ops.rl_core.sum_tree_find_prefixsum``.

    Args:
        tree: a sum tree from :func:`make_sum_tree`.
        value: query values of any shape; cast to the tree's dtype.

    Returns:
        int64 leaf numbers in ``[0, capacity)``, shaped like ``value``.

    Raises:
        ValueError: the tree is malformed or ``value`` is on another device.
        TypeError: the tree is not floating point.

    Examples:
        >>> import torch
        >>> from rl_buffers.trees import make_sum_tree, sum_tree_find_prefixsum, sum_tree_update_
        >>> tree = sum_tree_update_(make_sum_tree(4), torch.arange(4), torch.tensor([1.0, 0, 2, 1]))
        >>> sum_tree_find_prefixsum(tree, torch.tensor([0.0, 0.99, 1.0, 2.5, 3.0, 9.0])).tolist()
        [0, 0, 2, 2, 3, 3]
    """
    where = "sum_tree_find_prefixsum"
    _check_tree(where, tree)
    if value.device != tree.device:
        raise ValueError(
            f"{where}: expected value on {tree.device} like the tree, got {value.device}."
        )
    # Each step only where needed: this runs once per sampled batch.
    flat = value.detach() if value.requires_grad else value
    flat = flat if flat.dtype == tree.dtype else flat.to(tree.dtype)
    flat = flat if flat.dim() == 1 and flat.is_contiguous() else flat.reshape(-1).contiguous()
    ensure_kernel_packages()
    found = torch.ops.rl_core.sum_tree_find_prefixsum(tree, flat)
    return found if value.dim() == 1 else found.reshape(value.shape)


def sum_tree_total(tree: Tensor) -> Tensor:
    """The sum of all leaves of a sum tree: its root, ``tree[1]``.

    Args:
        tree: a sum tree from :func:`make_sum_tree`.

    Returns:
        A 0-dim view of the root.

    Examples:
        >>> import torch
        >>> from rl_buffers.trees import make_sum_tree, sum_tree_total, sum_tree_update_
        >>> tree = sum_tree_update_(make_sum_tree(2), torch.tensor([0, 1]), torch.tensor([1.0, 2.0]))
        >>> float(sum_tree_total(tree))
        3.0
    """
    return tree[1]


def min_tree_min(tree: Tensor) -> Tensor:
    """The smallest leaf of a min tree: its root, ``tree[1]``.

    Args:
        tree: a min tree from :func:`make_min_tree`.

    Returns:
        A 0-dim view of the root.

    Examples:
        >>> import torch
        >>> from rl_buffers.trees import make_min_tree, min_tree_min, min_tree_update_
        >>> tree = min_tree_update_(make_min_tree(2), torch.tensor([1]), torch.tensor([4.0]))
        >>> float(min_tree_min(tree))
        4.0
    """
    return tree[1]
