"""The fused prioritized-replay wrappers: the same results as the separate tree ops."""

from __future__ import annotations

import pytest
import torch

from rl_buffers import trees as tree_ops
from rl_core.ops import reference


def _trees(capacity, dtype=torch.float32):
    return tree_ops.make_sum_tree(capacity, dtype), tree_ops.make_min_tree(capacity, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_update_equals_the_two_tree_updates(dtype):
    gen = torch.Generator().manual_seed(0)
    sums, mins = _trees(64, dtype)
    expected_sums, expected_mins = _trees(64, dtype)
    for _ in range(4):
        # few distinct leaves: repeats in every batch, the last write must win
        index = torch.randint(0, 20, (50,), generator=gen)
        value = torch.rand(50, generator=gen, dtype=dtype)
        tree_ops.sum_min_tree_update_(sums, mins, index, value)
        reference.sum_tree_update_(expected_sums, index, value)
        reference.min_tree_update_(expected_mins, index, value)
        assert torch.equal(sums, expected_sums)
        assert torch.equal(mins, expected_mins)


def test_fused_update_takes_a_scalar_and_checks_its_arguments():
    sums, mins = tree_ops.sum_min_tree_update_(*_trees(4), torch.tensor([0, 2]), 2.0)
    assert sums[4:].tolist() == [2.0, 0.0, 2.0, 0.0]
    assert float(mins[1]) == 2.0
    before = (sums.clone(), mins.clone())
    with pytest.raises(ValueError, match=r"expected leaf indices in \[0, 4\), got values in"):
        tree_ops.sum_min_tree_update_(sums, mins, torch.tensor([1, 4]), torch.ones(2))
    assert torch.equal(sums, before[0])
    assert torch.equal(mins, before[1])
    with pytest.raises(
        ValueError,
        match=r"sum_min_tree_update_: expected min_tree of shape \(8,\), torch.float32 on cpu "
        r"like sum_tree, got \(16,\)",
    ):
        tree_ops.sum_min_tree_update_(sums, tree_ops.make_min_tree(8), torch.tensor([0]), 1.0)
    with pytest.raises(TypeError, match=r"sum_min_tree_update_: expected an int64 index"):
        tree_ops.sum_min_tree_update_(sums, mins, torch.tensor([0], dtype=torch.int32), 1.0)


def test_sample_equals_search_and_weights():
    gen = torch.Generator().manual_seed(3)
    sums, mins = _trees(256)
    priorities = torch.rand(200, generator=gen)
    priorities[torch.rand(200, generator=gen) < 0.3] = 0.0  # zero leaves are never drawn
    written = priorities > 0
    tree_ops.sum_min_tree_update_(sums, mins, torch.arange(200)[written], priorities[written])
    tree_ops.sum_tree_update_(sums, torch.arange(200)[~written], 0.0)
    uniform = torch.cat([torch.rand(3000, generator=gen), torch.tensor([0.0, 1.0, 1 - 1e-7])])
    index, weight = tree_ops.sum_tree_sample(sums, mins, uniform, 0.4)
    expected = tree_ops.sum_tree_find_prefixsum(sums, uniform * sums[1])
    assert torch.equal(index, expected)
    assert bool((priorities[index] > 0).all())
    assert torch.equal(weight, (sums[256:][index] / mins[1]).pow(-0.4))
    assert float(weight.max()) <= 1.0
    assert index.dtype == torch.int64
    assert weight.dtype == torch.float32


def test_sample_reshapes_like_uniform_and_checks_beta():
    sums, mins = tree_ops.sum_min_tree_update_(*_trees(4), torch.arange(4), torch.ones(4))
    index, weight = tree_ops.sum_tree_sample(
        sums, mins, torch.tensor([[0.1, 0.3], [0.6, 0.9]]), 0.0
    )
    assert index.tolist() == [[0, 1], [2, 3]]
    assert weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(ValueError, match=r"sum_tree_sample: expected beta to be a float >= 0"):
        tree_ops.sum_tree_sample(sums, mins, torch.rand(2), -0.5)
    with pytest.raises(ValueError, match=r"sum_tree_sample: expected min_tree of shape \(8,\)"):
        tree_ops.sum_tree_sample(sums, tree_ops.make_min_tree(2), torch.rand(2), 0.5)
    empty_index, empty_weight = tree_ops.sum_tree_sample(sums, mins, torch.rand(0), 0.5)
    assert empty_index.shape == empty_weight.shape == (0,)


def test_sample_is_proportional_to_the_priorities():
    gen = torch.Generator().manual_seed(11)
    priorities = torch.tensor([1.0, 0.0, 2.0, 5.0, 0.5, 0.0, 1.5, 0.0])
    sums, mins = _trees(8, torch.float64)
    tree_ops.sum_min_tree_update_(sums, mins, torch.arange(8), priorities.double())
    draws = 40_000
    index, _ = tree_ops.sum_tree_sample(
        sums, mins, torch.rand(draws, generator=gen, dtype=torch.float64), 1.0
    )
    counts = torch.bincount(index, minlength=8).double()
    expected = priorities.double() / priorities.sum() * draws
    nonzero = expected > 0
    assert counts[~nonzero].sum() == 0
    chi2 = float(((counts[nonzero] - expected[nonzero]) ** 2 / expected[nonzero]).sum())
    assert chi2 < 20.5  # chi-square, 4 degrees of freedom, p = 0.0004


def test_priority_update_is_checks_powers_and_the_fused_update():
    gen = torch.Generator().manual_seed(3)
    got = (tree_ops.make_sum_tree(64), tree_ops.make_min_tree(64), torch.ones(1))
    sums, mins = tree_ops.make_sum_tree(64), tree_ops.make_min_tree(64)
    largest = 1.0  # the running maximum of every value written, overwritten ones included
    for _ in range(3):
        index = torch.randint(0, 50, (40,), generator=gen)
        priority = torch.rand(40, generator=gen) * 3
        tree_ops.sum_min_tree_priority_update_(
            *got, index, priority, eps=1e-6, alpha=0.6, max_index=50
        )
        value = priority.add(1e-6).pow_(0.6)
        tree_ops.sum_min_tree_update_(sums, mins, index, value)
        largest = max(largest, float(value.max()))
    assert torch.equal(got[0], sums)
    assert torch.equal(got[1], mins)
    assert float(got[2]) == largest


def test_priority_update_refuses_bad_input_and_writes_nothing():
    trees = (tree_ops.make_sum_tree(8), tree_ops.make_min_tree(8), torch.ones(1))
    update = tree_ops.sum_min_tree_priority_update_
    with pytest.raises(IndexError, match=r"expected indices in \[0, 6\), got values in \[0, 7\]"):
        update(*trees, torch.tensor([0, 7]), torch.ones(2), eps=0.0, alpha=1.0, max_index=6)
    with pytest.raises(ValueError, match=r"expected priorities >= 0, got a minimum of -1"):
        update(*trees, torch.tensor([0, 7]), torch.tensor([1.0, -1.0]), eps=0.0, alpha=1.0)
    assert float(trees[0][1]) == 0.0
    assert float(trees[1][1]) == float("inf")
    with pytest.raises(ValueError, match=r"expected int64 index of shape \[K\] and priority"):
        update(*trees, torch.tensor([0]), torch.ones(2), eps=0.0, alpha=1.0)
    with pytest.raises(ValueError, match=r"expected priority and max_value in the trees'"):
        update(*trees, torch.tensor([0]), torch.ones(1, dtype=torch.float64), eps=0, alpha=1)
    with pytest.raises(ValueError, match=r"expected max_index to be an int, got 2.0"):
        update(*trees, torch.tensor([0]), torch.ones(1), eps=0.0, alpha=1.0, max_index=2.0)
