"""Sum and min segment trees: updates, duplicates, prefix-sum search, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rl_buffers.trees import (
    make_min_tree,
    make_sum_tree,
    min_tree_min,
    min_tree_update_,
    segment_tree_capacity,
    sum_tree_find_prefixsum,
    sum_tree_total,
    sum_tree_update_,
)


@pytest.mark.parametrize(
    ("size", "capacity"), [(1, 1), (2, 2), (3, 4), (1000, 1024), (2**20, 2**20)]
)
def test_segment_tree_capacity_rounds_up_to_a_power_of_two(size, capacity):
    assert segment_tree_capacity(size) == capacity


def test_constructors():
    tree = make_sum_tree(8, torch.float64)
    assert tree.shape == (16,)
    assert tree.dtype == torch.float64
    assert float(sum_tree_total(tree)) == 0.0
    tree = make_min_tree(8)
    assert tree.dtype == torch.get_default_dtype()
    assert torch.isinf(tree).all()


def _check_invariant(tree, combine):
    capacity = tree.shape[0] // 2
    parents = torch.arange(1, capacity)
    torch.testing.assert_close(tree[parents], combine(tree[2 * parents], tree[2 * parents + 1]))


@pytest.mark.parametrize("capacity", [1, 2, 64])
def test_sum_tree_random_updates_track_a_numpy_array(capacity):
    rng = np.random.default_rng(0)
    tree = make_sum_tree(capacity, torch.float64)
    leaves = np.zeros(capacity)
    for _ in range(20):
        index = rng.integers(0, capacity, size=5)
        value = rng.integers(0, 10, size=5).astype(np.float64)
        sum_tree_update_(tree, torch.from_numpy(index), torch.from_numpy(value))
        for i, v in zip(index, value):  # sequential writes: the last one wins
            leaves[i] = v
        np.testing.assert_array_equal(tree[capacity:].numpy(), leaves)
        assert float(sum_tree_total(tree)) == leaves.sum()
        _check_invariant(tree, torch.add)


def test_repeated_index_keeps_the_last_value():
    tree = make_sum_tree(4)
    sum_tree_update_(tree, torch.tensor([1, 3, 1, 1]), torch.tensor([5.0, 1.0, 7.0, 2.0]))
    assert tree[4:].tolist() == [0.0, 2.0, 0.0, 1.0]
    assert float(sum_tree_total(tree)) == 3.0
    tree = make_min_tree(4)
    min_tree_update_(tree, torch.tensor([2, 2]), torch.tensor([0.5, 3.0]))
    assert float(min_tree_min(tree)) == 3.0


def test_scalar_value_is_broadcast_and_cast_to_the_tree_dtype():
    tree = make_sum_tree(4, torch.float64)
    sum_tree_update_(tree, torch.tensor([0, 2]), 1.5)
    assert tree[4:].tolist() == [1.5, 0.0, 1.5, 0.0]
    sum_tree_update_(tree, torch.tensor([1]), torch.tensor([2.0], dtype=torch.float32))
    assert float(sum_tree_total(tree)) == 5.0


def test_empty_update_is_a_no_op():
    tree = make_sum_tree(4)
    sum_tree_update_(tree, torch.zeros(0, dtype=torch.int64), torch.zeros(0))
    assert float(sum_tree_total(tree)) == 0.0


def test_min_tree_matches_torch_min():
    gen = torch.Generator().manual_seed(1)
    capacity = 32
    tree = make_min_tree(capacity, torch.float64)
    leaves = torch.full((capacity,), float("inf"), dtype=torch.float64)
    for _ in range(10):
        index = torch.randint(0, capacity, (6,), generator=gen)
        value = torch.rand(6, generator=gen, dtype=torch.float64)
        min_tree_update_(tree, index, value)
        for i, v in zip(index.tolist(), value.tolist()):
            leaves[i] = v
        assert float(min_tree_min(tree)) == float(leaves.min())
        _check_invariant(tree, torch.minimum)
    # Raising the current minimum must expose the next one.
    smallest = int(leaves.argmin())
    min_tree_update_(tree, torch.tensor([smallest]), torch.tensor([10.0]))
    leaves[smallest] = 10.0
    assert float(min_tree_min(tree)) == float(leaves.min())


def test_prefixsum_search_matches_numpy_cumsum_searchsorted():
    rng = np.random.default_rng(2)
    capacity = 256
    leaves = rng.integers(0, 5, size=capacity).astype(np.float64)  # many zero leaves
    tree = make_sum_tree(capacity, torch.float64)
    sum_tree_update_(tree, torch.arange(capacity), torch.from_numpy(leaves))
    cumsum = np.cumsum(leaves)
    queries = np.concatenate([rng.uniform(0, cumsum[-1], size=500), np.arange(cumsum[-1])])
    found = sum_tree_find_prefixsum(tree, torch.from_numpy(queries))
    assert found.dtype == torch.int64
    np.testing.assert_array_equal(found.numpy(), np.searchsorted(cumsum, queries, side="right"))
    assert (leaves[found.numpy()] > 0).all()


def test_prefixsum_search_out_of_range_queries():
    tree = make_sum_tree(8, torch.float64)
    sum_tree_update_(tree, torch.tensor([1, 2, 5]), torch.tensor([1.0, 2.0, 3.0]))
    queries = torch.tensor([-5.0, 6.0, 1e9, float("inf")], dtype=torch.float64)
    assert sum_tree_find_prefixsum(tree, queries).tolist() == [1, 5, 5, 5]
    assert sum_tree_find_prefixsum(make_sum_tree(8), torch.tensor([0.0, 3.0])).tolist() == [0, 0]


def test_prefixsum_search_keeps_the_query_shape_and_casts_it():
    tree = make_sum_tree(4, torch.float64)
    sum_tree_update_(tree, torch.arange(4), torch.ones(4, dtype=torch.float64))
    found = sum_tree_find_prefixsum(tree, torch.tensor([[0.5, 1.5], [2.5, 3.5]]))
    assert found.tolist() == [[0, 1], [2, 3]]


def test_uniform_queries_sample_in_proportion_to_priority():
    priorities = torch.tensor([1.0, 0.0, 3.0, 4.0])
    tree = sum_tree_update_(make_sum_tree(4), torch.arange(4), priorities)
    queries = torch.rand(80_000, generator=torch.Generator().manual_seed(3)) * 8.0
    counts = torch.bincount(sum_tree_find_prefixsum(tree, queries), minlength=4).double()
    torch.testing.assert_close(
        counts / counts.sum(), (priorities / 8.0).double(), atol=0.01, rtol=0
    )


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: make_sum_tree(6),
            ValueError,
            r"make_sum_tree: expected capacity to be a power of two >= 1, got 6\. Use segment_tree_capacity\(6\)",
        ),
        (
            lambda: make_min_tree(0),
            ValueError,
            r"make_min_tree: expected capacity to be a power of two",
        ),
        (
            lambda: segment_tree_capacity(0),
            ValueError,
            r"segment_tree_capacity: expected size >= 1, got 0",
        ),
        (
            lambda: sum_tree_update_(make_sum_tree(4), torch.tensor([0, 4]), torch.ones(2)),
            ValueError,
            r"sum_tree_update_: expected leaf indices in \[0, 4\), got values in \[0, 4\]",
        ),
        (
            lambda: min_tree_update_(make_min_tree(4), torch.tensor([-1]), torch.ones(1)),
            ValueError,
            r"min_tree_update_: expected leaf indices in \[0, 4\), got values in \[-1, -1\]",
        ),
        (
            lambda: sum_tree_update_(make_sum_tree(4), torch.tensor([0], dtype=torch.int32), 1.0),
            TypeError,
            r"sum_tree_update_: expected an int64 index, got torch.int32. Convert it with index.long\(\)",
        ),
        (
            lambda: sum_tree_update_(make_sum_tree(4), torch.tensor([[0]]), 1.0),
            ValueError,
            r"expected a 1-D index, got shape \(1, 1\)",
        ),
        (
            lambda: sum_tree_update_(make_sum_tree(4), torch.tensor([0, 1]), torch.ones(3)),
            ValueError,
            r"expected value of shape \(2,\) like index, got \(3,\)",
        ),
        (
            lambda: sum_tree_update_(torch.zeros(6), torch.tensor([0]), 1.0),
            ValueError,
            r"expected a 1-D tree of size 2 \* capacity with capacity a power of two, got shape \(6,\)",
        ),
        (
            lambda: sum_tree_find_prefixsum(torch.zeros(2, 4), torch.zeros(1)),
            ValueError,
            r"sum_tree_find_prefixsum: expected a 1-D tree",
        ),
        (
            lambda: sum_tree_find_prefixsum(torch.zeros(8, dtype=torch.int64), torch.zeros(1)),
            TypeError,
            r"expected a floating-point tree, got torch.int64",
        ),
        (
            lambda: sum_tree_find_prefixsum(make_sum_tree(4), torch.zeros(1, device="meta")),
            ValueError,
            r"expected value on cpu like the tree, got meta",
        ),
    ],
)
def test_segment_tree_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_rejected_update_leaves_the_tree_unchanged():
    tree = sum_tree_update_(make_sum_tree(4), torch.tensor([1]), torch.tensor([2.0]))
    before = tree.clone()
    with pytest.raises(ValueError, match="expected leaf indices"):
        sum_tree_update_(tree, torch.tensor([0, 9]), torch.tensor([1.0, 1.0]))
    torch.testing.assert_close(tree, before)


def test_priorities_that_require_grad_do_not_attach_the_tree_to_a_graph():
    tree = make_sum_tree(4)
    td_error = torch.ones(2, requires_grad=True) * 2.0
    sum_tree_update_(tree, torch.tensor([0, 1]), td_error)
    assert not tree.requires_grad
    assert tree.grad_fn is None
    raw = make_sum_tree(4)
    torch.ops.rl_core.sum_tree_update_(raw, torch.tensor([0, 1]), td_error)
    assert not raw.requires_grad
    torch.testing.assert_close(raw, tree)
