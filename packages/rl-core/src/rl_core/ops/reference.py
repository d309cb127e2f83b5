"""Pure-torch reference kernels of the ``rl_core`` ops, in the kernel layout.

These functions are what ``torch.ops.rl_core.<name>`` runs when no faster kernel is
registered (``_library`` registers them as the ops' default kernels), so each is *the*
definition of its op's math: GAE, TD(lambda) and V-trace are written here once, and every
public value function (:mod:`rl_core.ops`, ``rl_objectives.value.functional`` and its
``vec_*`` names) runs them through the op. A compiled kernel (``rl-kernels``) is tested
against them; they are tested in turn against float64 loops written from the papers'
formulas inside the tests (``tests/ops/test_reference.py``). They take exactly the
arguments of the op schema, in the kernel layout, with no reshaping and no argument
coercion:

- Value ops: every tensor is ``[T, N]`` with **time first**: row ``t`` holds time step ``t``
  of ``N`` independent sequences. Float tensors share one floating dtype and the device;
  ``done`` and ``terminated`` are ``torch.bool``. The public wrappers
  (:func:`rl_core.ops.generalized_advantage_estimate`, ...) move any ``time_dim`` first and
  flatten batch and feature dimensions into ``N``.
- Segment trees: ``tree`` is 1-D of size ``2 * capacity`` (``capacity`` a power of two),
  leaves at ``[capacity, 2 * capacity)``, node ``i`` combines nodes ``2i`` and ``2i + 1``,
  the root at index 1 and index 0 unused. ``index`` is int64 ``[K]`` (leaf numbers in
  ``[0, capacity)``), ``value`` is ``[K]`` with the tree's dtype.

The value kernels scan time backwards with a Python loop over ``T``, vectorised over ``N``;
the segment-tree kernels loop over the ``log2(capacity)`` tree levels, vectorised over the
batch. A compiled kernel replaces exactly these loops.

Examples:
    >>> import torch
    >>> from rl_core.ops import reference
    >>> reward = torch.ones(3, 1)
    >>> value = torch.zeros(3, 1)
    >>> flags = torch.zeros(3, 1, dtype=torch.bool)
    >>> adv, target = reference.generalized_advantage_estimate(
    ...     0.5, 1.0, value, value, reward, flags, flags
    ... )
    >>> adv.flatten().tolist()
    [1.75, 1.5, 1.0]
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "generalized_advantage_estimate",
    "td_lambda_return_estimate",
    "vtrace_advantage_estimate",
    "sum_tree_update_",
    "min_tree_update_",
    "sum_tree_find_prefixsum",
    "sum_min_tree_update_",
    "sum_tree_sample",
    "sum_min_tree_priority_update_",
    "gather_rows",
]


def generalized_advantage_estimate(
    gamma: float,
    lmbda: float,
    state_value: Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor,
) -> tuple[Tensor, Tensor]:
    """GAE advantage and value target for ``[T, N]`` inputs (reference kernel).

    ``delta[t] = reward[t] + gamma * (1 - terminated[t]) * next_state_value[t] - state_value[t]``
    and ``advantage[t] = delta[t] + gamma * lmbda * (1 - done[t]) * advantage[t + 1]`` with
    ``advantage[T] = 0``; ``value_target = advantage + state_value``.

    Arguments and returns: those of ``rl_core.ops.generalized_advantage_estimate``, in the kernel layout
    (see the module docstring).
    """
    bootstrap = gamma * (~terminated).to(reward.dtype)
    decay = (gamma * lmbda) * (~done).to(reward.dtype)
    delta = reward + bootstrap * next_state_value - state_value
    advantage = torch.empty_like(delta)
    running = delta.new_zeros(delta.shape[1:])
    for t in range(delta.shape[0] - 1, -1, -1):
        running = delta[t] + decay[t] * running
        advantage[t] = running
    return advantage, advantage + state_value


def td_lambda_return_estimate(
    gamma: float,
    lmbda: float,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor,
) -> Tensor:
    """TD(lambda) value target for ``[T, N]`` inputs (reference kernel).

    ``G[t] = reward[t] + gamma * (1 - terminated[t]) * ((1 - l[t]) * next_state_value[t]
    + l[t] * G[t + 1])`` with ``l[t] = lmbda * (1 - done[t])``: the return bootstraps fully
    from ``next_state_value`` at an episode boundary and at the last step.

    Arguments and returns: those of ``rl_core.ops.td_lambda_return_estimate``, in the kernel layout
    (see the module docstring).
    """
    bootstrap = gamma * (~terminated).to(reward.dtype)
    mix = lmbda * (~done).to(reward.dtype)
    target = torch.empty_like(reward)
    if reward.shape[0] == 0:
        return target
    # Seeding the scan with the last bootstrap value makes the last step a plain TD(0) target.
    running = next_state_value[-1]
    for t in range(reward.shape[0] - 1, -1, -1):
        running = reward[t] + bootstrap[t] * ((1 - mix[t]) * next_state_value[t] + mix[t] * running)
        target[t] = running
    return target


def vtrace_advantage_estimate(
    gamma: float,
    rho_thresh: float,
    c_thresh: float,
    log_pi: Tensor,
    log_mu: Tensor,
    state_value: Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor,
) -> tuple[Tensor, Tensor]:
    """V-trace advantage and value target for ``[T, N]`` inputs (reference kernel).

    With ``ratio = exp(log_pi - log_mu)``, ``rho = min(rho_thresh, ratio)``,
    ``c = min(c_thresh, ratio)`` and ``b = gamma * (1 - terminated)``:
    ``d[t] = rho[t] * (reward[t] + b[t] * next_state_value[t] - state_value[t])
    + gamma * c[t] * (1 - done[t]) * d[t + 1]`` with ``d[T] = 0``; the value target is
    ``v = state_value + d``, and the policy-gradient advantage is
    ``rho[t] * (reward[t] + b[t] * v_next[t] - state_value[t])`` where the next state's
    target ``v_next[t]`` is ``v[t + 1] = state_value[t + 1] + d[t + 1]`` inside an episode
    (IMPALA's ``v_{s+1}``) and ``next_state_value[t]`` at an episode end and at the last step.

    Arguments and returns: those of ``rl_core.ops.vtrace_advantage_estimate``, in the kernel layout
    (see the module docstring).
    """
    ratio = (log_pi - log_mu).exp()
    rho = ratio.clamp(max=rho_thresh)
    not_done = (~done).to(reward.dtype)
    bootstrap = gamma * (~terminated).to(reward.dtype)
    decay = gamma * ratio.clamp(max=c_thresh) * not_done
    delta = rho * (reward + bootstrap * next_state_value - state_value)
    correction = torch.empty_like(delta)
    running = delta.new_zeros(delta.shape[1:])
    for t in range(delta.shape[0] - 1, -1, -1):
        running = delta[t] + decay[t] * running
        correction[t] = running
    value_target = state_value + correction
    # v[t + 1] inside an episode; the bootstrap value where the data or the episode stops.
    next_target = torch.cat([value_target[1:], next_state_value[-1:]])
    next_target = torch.where(done, next_state_value, next_target)
    advantage = rho * (reward + bootstrap * next_target - state_value)
    return advantage, value_target


def _unique_leaves(name: str, index: Tensor, capacity: int) -> tuple[Tensor, Tensor]:
    """The distinct leaves of ``index`` (sorted) and, for each, its last position in ``index``.

    Raises ``ValueError`` naming the range of ``index`` when a leaf is outside
    ``[0, capacity)`` (the sorted leaves give the range without a separate scan).
    """
    leaves, inverse = torch.unique(index, return_inverse=True)
    low, high = int(leaves[0]), int(leaves[-1])
    if low < 0 or high >= capacity:
        raise ValueError(
            f"{name}: expected leaf indices in [0, {capacity}), got values in [{low}, {high}]. "
            f"Drop out-of-range indices or build a tree with a larger capacity."
        )
    positions = torch.arange(index.numel(), device=index.device)
    last = torch.full_like(leaves, -1).scatter_reduce_(0, inverse, positions, "amax")
    return leaves, last


@torch.no_grad()
def _tree_update_(name: str, tree: Tensor, index: Tensor, value: Tensor, combine) -> None:
    # Priorities carry no gradient: a value that requires grad must not make the tree do so.
    if index.numel() == 0:
        return
    capacity = tree.shape[0] // 2
    # Last write wins: keep, for each distinct leaf, the last position where it appears.
    leaves, last = _unique_leaves(name, index, capacity)
    # Strided views of the left (even) and right (odd) children: entry j of each is a child
    # of node j. Gathers from them come out contiguous, so every op below runs on
    # contiguous tensors of one dtype (torch's fast elementwise loops).
    lefts, rights = tree[0::2], tree[1::2]
    nodes = leaves + capacity
    tree.index_copy_(0, nodes, value.index_select(0, last))
    # Levels with at least as many nodes as written leaves: only the written leaves'
    # ancestors, gathered and combined.
    while capacity > 1 and capacity > 2 * leaves.numel():
        # Siblings share a parent: a repeated parent gets the same value from each write.
        nodes = nodes >> 1
        parent = combine(lefts.index_select(0, nodes), rights.index_select(0, nodes))
        tree.index_copy_(0, nodes, parent)
        capacity //= 2
    # The small levels above: each level whole, in one strided op (the nodes no leaf is
    # under are recomputed from unchanged children, so they keep their values).
    while capacity > 1:
        half = capacity // 2
        combine(lefts[half:capacity], rights[half:capacity], out=tree[half:capacity])
        capacity = half


def sum_tree_update_(tree: Tensor, index: Tensor, value: Tensor) -> None:
    """Writes ``value`` at leaves ``index`` of a sum tree and refreshes their ancestors.

    Each ancestor is recomputed from its two children (no incremental add), so rounding
    errors do not build up over many updates. When a leaf appears more than once in
    ``index``, the value at its last position is written.

    Arguments and returns: those of ``rl_buffers.trees.sum_tree_update_``, in the kernel layout
    (see the module docstring).

    Raises:
        ValueError: an index is outside ``[0, capacity)``.
    """
    _tree_update_("sum_tree_update_", tree, index, value, torch.add)


def min_tree_update_(tree: Tensor, index: Tensor, value: Tensor) -> None:
    """Writes ``value`` at leaves ``index`` of a min tree and refreshes their ancestors.

    Same layout and duplicate rule as :func:`sum_tree_update_`; a node holds the minimum of
    its children, empty leaves hold ``+inf``.

    Arguments and returns: those of ``rl_buffers.trees.min_tree_update_``, in the kernel layout
    (see the module docstring).

    Raises:
        ValueError: an index is outside ``[0, capacity)``.
    """
    _tree_update_("min_tree_update_", tree, index, value, torch.minimum)


def sum_tree_find_prefixsum(tree: Tensor, value: Tensor) -> Tensor:
    """For each ``v`` in ``value``, the first leaf whose inclusive prefix sum exceeds ``v``.

    Returns the smallest leaf ``i`` with ``leaf[0] + ... + leaf[i] > v``, found by one
    descent from the root per value: go left when ``v < sum(left subtree)``, otherwise
    subtract that sum and go right. Values below 0 count as 0. A value at or above the total
    (or one pushed there by rounding) lands on the last leaf with a non-zero priority, because
    the descent never enters an all-zero subtree while the other side has mass. An all-zero
    tree returns leaf 0.

    Arguments and returns: those of ``rl_buffers.trees.sum_tree_find_prefixsum``, in the kernel layout
    (see the module docstring).
    """
    capacity = tree.shape[0] // 2
    # Entry j of ``lefts``/``rights`` is the left/right child of node j (strided views;
    # the gathers come out contiguous, so each op below is a fast one-dtype loop).
    lefts, rights = tree[0::2], tree[1::2]
    remaining = value.clamp(min=0)
    node = torch.ones(value.shape, dtype=torch.int64, device=value.device)
    while capacity > 1:
        left_sum = lefts.index_select(0, node)
        go_right = (remaining >= left_sum).logical_and_(rights.index_select(0, node) > 0)
        remaining = torch.where(go_right, remaining - left_sum, remaining)
        # 2 * node + go_right in one call: bool + int64 promotes to int64 exactly.
        node = torch.add(go_right, node, alpha=2)
        capacity //= 2
    return node.sub_(tree.shape[0] // 2)


def sum_min_tree_update_(sum_tree: Tensor, min_tree: Tensor, index: Tensor, value: Tensor) -> None:
    """Writes ``value`` at leaves ``index`` of a sum tree and of a min tree (one fused op).

    Exactly :func:`sum_tree_update_` on ``sum_tree`` then :func:`min_tree_update_` on
    ``min_tree`` with the same arguments. The leaf range is checked before anything is
    written, so on an error both trees are unchanged.

    Arguments and returns: those of ``rl_buffers.trees.sum_min_tree_update_``, in the kernel layout
    (see the module docstring).

    Raises:
        ValueError: an index is outside ``[0, capacity)``.
    """
    sum_tree_update_(sum_tree, index, value)
    min_tree_update_(min_tree, index, value)


def sum_tree_sample(
    sum_tree: Tensor, min_tree: Tensor, uniform: Tensor, beta: float
) -> tuple[Tensor, Tensor]:
    """Proportional draws from a sum tree and their importance weights (one fused op).

    ``index = sum_tree_find_prefixsum(sum_tree, uniform * total)`` with ``total =
    sum_tree[1]``, so a ``uniform`` drawn from ``[0, 1)`` picks leaf ``i`` with probability
    ``leaf[i] / total``; ``weight = (leaf[index] / min_tree[1]) ** -beta``, the importance
    weights of prioritized replay (1 for the smallest stored priority, below 1 above it).

    Arguments and returns: those of ``rl_buffers.trees.sum_tree_sample``, in the kernel layout
    (see the module docstring).
    """
    index = sum_tree_find_prefixsum(sum_tree, uniform * sum_tree[1])
    leaves = sum_tree[sum_tree.shape[0] // 2 :]
    weight = leaves.index_select(0, index).div_(min_tree[1]).pow_(-beta)
    return index, weight


def checked_priority_values(
    name: str, index: Tensor, priority: Tensor, eps: float, alpha: float, max_index: int
) -> Tensor:
    """``(priority + eps) ** alpha`` after checking ``index`` against ``[0, max_index)`` and
    ``priority >= 0`` (no NaN); the part of :func:`sum_min_tree_priority_update_` before the
    tree writes.

    Raises:
        IndexError: an index is outside ``[0, max_index)``.
        ValueError: a priority is negative or NaN.
    """
    if index.numel():
        low, high = (int(bound) for bound in torch.aminmax(index))
        if low < 0 or high >= max_index:
            raise IndexError(
                f"rl_core::{name}: expected indices in [0, {max_index}), got values in "
                f"[{low}, {high}]."
            )
        smallest = float(priority.min())
        if not smallest >= 0:  # also NaN
            raise ValueError(
                f"rl_core::{name}: expected priorities >= 0, got a minimum of {smallest}."
            )
    return priority.add(eps).pow_(alpha)


def sum_min_tree_priority_update_(
    sum_tree: Tensor,
    min_tree: Tensor,
    max_value: Tensor,
    index: Tensor,
    priority: Tensor,
    eps: float,
    alpha: float,
    max_index: int,
) -> None:
    """Raw priorities into both trees: the write of a prioritized sampler's update (one op).

    Checks every index against ``[0, max_index)`` and every priority against ``>= 0`` before
    anything is written, then writes ``value = (priority + eps) ** alpha`` (torch's ``add``
    and ``pow``) at leaves ``index`` as :func:`sum_min_tree_update_` does, and raises
    ``max_value`` (one element) to ``value.max()`` when that is larger.

    Arguments and returns: those of ``rl_buffers.trees.sum_min_tree_priority_update_``, in the kernel layout
    (see the module docstring).

    Raises:
        IndexError: an index is outside ``[0, max_index)`` (nothing is written).
        ValueError: a priority is negative or NaN (nothing is written).
    """
    value = checked_priority_values(
        "sum_min_tree_priority_update_", index, priority, eps, alpha, max_index
    )
    if value.numel():
        torch.maximum(max_value, value.max(), out=max_value)
    sum_min_tree_update_(sum_tree, min_tree, index, value)


def gather_rows(tables: list[Tensor], index: Tensor) -> list[Tensor]:
    """Rows ``index`` of each table: ``[table.index_select(0, index) for table in tables]``.

    Arguments and returns: those of ``rl_core.ops.gather_rows``, in the kernel layout
    (see the module docstring).

    Raises:
        IndexError: a row number is outside a table.
    """
    return [table.index_select(0, index) for table in tables]
