"""Sum and min segment trees for prioritized replay, in flat tensors, over rl-core's ops.

:class:`~rl_buffers.PrioritizedSampler` and :class:`~rl_buffers.PrioritizedSliceSampler`
keep their priorities in these trees. Each function checks its arguments and calls one
``rl_core`` op (``torch.ops.rl_core.<name>``; schemas and reference kernels in
:mod:`rl_core.ops`), so the compiled kernels of an installed kernel package (``rl-kernels``)
run it; the first call loads such a package.

=================================  =========================================================
op (``torch.ops.rl_core.*``)       function here
=================================  =========================================================
``sum_tree_update_``               :func:`sum_tree_update_`
``min_tree_update_``               :func:`min_tree_update_`
``sum_tree_find_prefixsum``        :func:`sum_tree_find_prefixsum`
``sum_min_tree_update_``           :func:`sum_min_tree_update_` (both trees, one call)
``sum_tree_sample``                :func:`sum_tree_sample` (draws + importance weights)
``sum_min_tree_priority_update_``  :func:`sum_min_tree_priority_update_` (checks + powers +
                                   both trees, one call)
=================================  =========================================================

:func:`segment_tree_capacity`, the constructors :func:`make_sum_tree` /
:func:`make_min_tree` and the roots :func:`sum_tree_total` / :func:`min_tree_min`
(``tree[1]``) need no op.

Examples:
    >>> import torch
    >>> from rl_buffers import trees
    >>> sums = trees.make_sum_tree(trees.segment_tree_capacity(3))
    >>> _ = trees.sum_tree_update_(sums, torch.arange(3), torch.tensor([1.0, 0.0, 3.0]))
    >>> float(trees.sum_tree_total(sums))
    4.0
    >>> trees.sum_tree_find_prefixsum(sums, torch.tensor([0.5, 2.0])).tolist()
    [0, 2]
"""

from rl_buffers.trees.priority_trees import (
    sum_min_tree_priority_update_,
    sum_min_tree_update_,
    sum_tree_sample,
)
from rl_buffers.trees.segment_tree import (
    make_min_tree,
    make_sum_tree,
    min_tree_min,
    min_tree_update_,
    segment_tree_capacity,
    sum_tree_find_prefixsum,
    sum_tree_total,
    sum_tree_update_,
)

__all__ = [
    "segment_tree_capacity",
    "make_sum_tree",
    "make_min_tree",
    "sum_tree_update_",
    "min_tree_update_",
    "sum_tree_find_prefixsum",
    "sum_tree_total",
    "min_tree_min",
    "sum_min_tree_update_",
    "sum_tree_sample",
    "sum_min_tree_priority_update_",
]
