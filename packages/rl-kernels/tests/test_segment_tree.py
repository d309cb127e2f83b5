"""The compiled segment-tree kernels against rl_core's reference kernels."""

from __future__ import annotations

import pytest
import torch

import rl_kernels  # noqa: F401  (registers the kernels)
from rl_core.ops import reference

TREE_OPS = ("sum_tree_update_", "min_tree_update_", "sum_tree_find_prefixsum")


def _sum_tree(capacity, dtype=None, device=None):
    """An empty sum tree in the ops' layout: 1-D, ``2 * capacity`` zeros."""
    return torch.zeros(2 * capacity, dtype=dtype, device=device)


def _min_tree(capacity, dtype=None, device=None):
    """An empty min tree in the ops' layout: 1-D, ``2 * capacity`` times ``+inf``."""
    return torch.full((2 * capacity,), float("inf"), dtype=dtype, device=device)


@pytest.mark.parametrize("name", TREE_OPS)
def test_kernels_are_registered_for_cpu(name):
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"rl_core::{name}", "CPU")


def _random_updates(capacity, count, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    # Few distinct leaves: every batch repeats leaves, and the last write must win.
    index = torch.randint(0, min(capacity, max(1, count // 3)), (count,), generator=gen)
    value = torch.rand(count, generator=gen, dtype=dtype)
    return index, value


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", ["sum", "min"])
# (16384, 30000): repeats in the levels the kernels walk without repeats (<= 4096 nodes),
# and in the levels below them, walked as they come.
@pytest.mark.parametrize(
    ("capacity", "count"), [(1, 3), (8, 20), (1024, 300), (4096, 5000), (16384, 30000)]
)
def test_tree_update_matches_reference(device, dtype, kind, capacity, count):
    make = _sum_tree if kind == "sum" else _min_tree
    name = f"{kind}_tree_update_"
    expected = make(capacity, dtype)
    got = make(capacity, dtype, device=device)
    for seed in range(3):
        index, value = _random_updates(capacity, count, dtype, seed)
        getattr(reference, name)(expected, index, value)
        getattr(torch.ops.rl_core, name)(got, index.to(device), value.to(device))
        # Each node is recomputed from its children as in the reference: bit-equal.
        assert torch.equal(got.cpu(), expected)


def test_tree_update_of_strided_tree_and_values(device):
    buffer = torch.zeros(32, dtype=torch.float64, device=device)
    tree = buffer[::2]
    assert not tree.is_contiguous()
    value = torch.arange(12.0, dtype=torch.float64, device=device)[::2]
    index = torch.tensor([0, 3, 5, 3, 7, 1], device=device)
    torch.ops.rl_core.sum_tree_update_(tree, index, value)
    expected = _sum_tree(8, torch.float64)
    reference.sum_tree_update_(expected, index.cpu(), value.cpu())
    assert torch.equal(buffer[::2].cpu(), expected)
    assert torch.equal(buffer[1::2].cpu(), torch.zeros(16, dtype=torch.float64))


def test_empty_update_and_empty_search(device):
    tree = _sum_tree(4, device=device)
    torch.ops.rl_core.sum_tree_update_(
        tree, torch.empty(0, dtype=torch.int64, device=device), torch.empty(0, device=device)
    )
    assert torch.equal(tree.cpu(), torch.zeros(8))
    found = torch.ops.rl_core.sum_tree_find_prefixsum(tree, torch.empty(0, device=device))
    assert found.shape == (0,)
    assert found.dtype == torch.int64


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_prefixsum_search_matches_reference(device, dtype):
    gen = torch.Generator().manual_seed(1)
    capacity = 512
    tree = _sum_tree(capacity, dtype)
    priorities = torch.rand(capacity, generator=gen, dtype=dtype)
    priorities[torch.rand(capacity, generator=gen) < 0.3] = 0  # zero leaves are never found
    priorities[-20:] = 0  # the tail is empty: queries past the total land before it
    reference.sum_tree_update_(tree, torch.arange(capacity), priorities)
    total = float(tree[1])
    query = torch.cat(
        [
            torch.rand(2000, generator=gen, dtype=dtype) * total,
            torch.tensor([-1.0, 0.0, total, total * 2, float(tree[capacity])], dtype=dtype),
        ]
    )
    expected = reference.sum_tree_find_prefixsum(tree, query)
    got = torch.ops.rl_core.sum_tree_find_prefixsum(tree.to(device), query.to(device))
    assert torch.equal(got.cpu(), expected)
    assert bool((priorities[got.cpu()] > 0).all())


def test_prefixsum_search_on_zero_tree_and_strided_queries(device):
    zeros = _sum_tree(16, device=device)
    found = torch.ops.rl_core.sum_tree_find_prefixsum(
        zeros, torch.tensor([0.0, 3.0], device=device)
    )
    assert found.tolist() == [0, 0]
    tree = _sum_tree(4, device=device)
    torch.ops.rl_core.sum_tree_update_(
        tree, torch.arange(4, device=device), torch.tensor([1.0, 0, 2, 1], device=device)
    )
    query = torch.tensor([[0.0, 7.0], [0.99, 7.0], [1.0, 7.0], [2.5, 7.0]], device=device)[:, 0]
    assert not query.is_contiguous()
    assert torch.ops.rl_core.sum_tree_find_prefixsum(tree, query).tolist() == [0, 0, 2, 2]


@pytest.mark.parametrize("name", ["sum_tree_update_", "min_tree_update_"])
def test_out_of_range_update_raises_and_leaves_tree_unchanged(device, name):
    tree = _sum_tree(8, device=device)
    torch.ops.rl_core.sum_tree_update_(
        tree, torch.tensor([2], device=device), torch.tensor([1.5], device=device)
    )
    before = tree.clone()
    with pytest.raises(
        ValueError, match=rf"{name}: expected leaf indices in \[0, 8\), got values in \[-1, 8\]"
    ):
        getattr(torch.ops.rl_core, name)(
            tree, torch.tensor([3, -1, 8], device=device), torch.ones(3, device=device)
        )
    assert torch.equal(tree, before)


def test_tree_kernels_check_the_layout(device):
    with pytest.raises(
        RuntimeError,
        match=r"rl_core::sum_tree_update_: expected a 1-D tree of size 2 \* capacity \(a power "
        r"of two\), got shape \(6,\)\.",
    ):
        torch.ops.rl_core.sum_tree_update_(
            torch.zeros(6, device=device),
            torch.zeros(1, dtype=torch.int64, device=device),
            torch.zeros(1, device=device),
        )
    with pytest.raises(
        RuntimeError,
        match=r"rl_core::min_tree_update_: expected index int64 of shape \(2,\) on "
        rf"{device}.*, got torch.int32 of shape \(2,\)",
    ):
        torch.ops.rl_core.min_tree_update_(
            torch.zeros(8, device=device),
            torch.zeros(2, dtype=torch.int32, device=device),
            torch.zeros(2, device=device),
        )
    with pytest.raises(
        RuntimeError,
        match=r"rl_core::sum_tree_find_prefixsum: expected value 1-D torch.float32 on "
        rf"{device}.*, got shape \(2,\) torch.float64",
    ):
        torch.ops.rl_core.sum_tree_find_prefixsum(
            torch.zeros(8, device=device), torch.zeros(2, dtype=torch.float64, device=device)
        )
