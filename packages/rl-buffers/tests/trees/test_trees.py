"""rl_buffers.trees: the tree wrappers that left rl-core (issue 50) call rl-core's ops, load the
kernel packages at their first call, and trace under torch.compile."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest
import torch

import rl_core.ops
from rl_buffers import trees
from rl_core.ops import kernel_packages, reference

MOVED = [
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


def test_the_tree_wrappers_live_in_rl_buffers_not_in_rl_core():
    assert sorted(trees.__all__) == sorted(MOVED)
    for name in MOVED:
        assert callable(getattr(trees, name)), name
        assert name not in rl_core.ops.__all__, name
        assert not hasattr(rl_core.ops, name), f"rl_core.ops still exports {name}"
    # the ops themselves (schemas and reference kernels) stay in rl-core
    for name in ("sum_tree_update_", "sum_tree_sample", "sum_min_tree_priority_update_"):
        assert hasattr(reference, name)
        assert getattr(torch.ops.rl_core, name).default is not None


def _wrapper_call(name):
    """Calls the wrapper of tree op ``name`` on small trees; returns what to compare."""
    sums, mins = trees.make_sum_tree(4), trees.make_min_tree(4)
    index, value = torch.tensor([1, 2]), torch.tensor([3.0, 4.0])
    if name == "sum_tree_find_prefixsum":
        torch.ops.rl_core.sum_tree_update_(sums, torch.arange(4), torch.ones(4))
        return trees.sum_tree_find_prefixsum(sums, torch.tensor([0.5, 2.5]))
    if name == "sum_tree_sample":
        torch.ops.rl_core.sum_min_tree_update_(sums, mins, torch.arange(4), torch.ones(4))
        return trees.sum_tree_sample(sums, mins, torch.tensor([0.1, 0.5, 0.9]), 0.5)
    if name == "sum_min_tree_priority_update_":
        return trees.sum_min_tree_priority_update_(
            sums, mins, torch.ones(1), index, value, eps=0.5, alpha=0.7
        )
    if name == "sum_min_tree_update_":
        return trees.sum_min_tree_update_(sums, mins, index, value)
    tree = sums if name == "sum_tree_update_" else mins
    return getattr(trees, name)(tree, index, value)


TREE_OPS = [
    "sum_tree_update_",
    "min_tree_update_",
    "sum_tree_find_prefixsum",
    "sum_min_tree_update_",
    "sum_tree_sample",
    "sum_min_tree_priority_update_",
]


@pytest.mark.parametrize("name", TREE_OPS)
def test_each_wrapper_runs_a_cpu_kernel_registered_for_its_op(name):
    """What rl-kernels does (a CPU kernel in an IMPL library of "rl_core"): the wrapper
    calls the op, so the registered kernel runs, once, and gives the reference's result."""
    calls = []

    def cpu_kernel(*args):
        calls.append(name)
        return getattr(reference, name)(*args)

    expected = _wrapper_call(name)
    with torch.library._scoped_library("rl_core", "IMPL") as lib:
        lib.impl(name, cpu_kernel, "CPU")
        torch.testing.assert_close(_wrapper_call(name), expected)
    assert calls == [name]


@pytest.mark.parametrize(
    "call",
    [
        lambda: trees.sum_tree_find_prefixsum(trees.make_sum_tree(2), torch.zeros(1)),
        lambda: trees.min_tree_update_(trees.make_min_tree(2), torch.tensor([0]), 1.0),
        lambda: trees.sum_tree_sample(
            trees.make_sum_tree(2), trees.make_min_tree(2), torch.rand(1), 0.5
        ),
    ],
)
def test_the_first_wrapper_call_loads_the_kernel_packages(monkeypatch, call):
    # The installed entry points replaced by one real module ("json"), nothing loaded yet.
    point = EntryPoint(name="plain", value="json", group=rl_core.ops.ENTRY_POINT_GROUP)
    monkeypatch.setattr(kernel_packages, "entry_points", lambda *, group: [point])
    monkeypatch.setattr(kernel_packages, "_loaded", None)
    call()
    assert kernel_packages._loaded == ("plain",)


def _gae_then_sample(value, next_value, reward, done, sums, mins, index, uniform):
    advantage, _ = rl_core.ops.generalized_advantage_estimate(
        0.9, 0.9, value, next_value, reward, done
    )
    trees.sum_min_tree_update_(sums, mins, index, advantage.abs().flatten()[: index.shape[0]])
    leaves = trees.sum_tree_find_prefixsum(sums, uniform * trees.sum_tree_total(sums))
    drawn, weight = trees.sum_tree_sample(sums, mins, uniform, 0.5)
    return leaves, drawn, weight, trees.min_tree_min(mins)


def test_aot_eager_fullgraph_traces_the_wrappers_through_the_fake_kernels():
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(0)
    value, next_value, reward = (torch.randn(4, 16, 1, generator=gen) for _ in range(3))
    done = torch.rand(4, 16, 1, generator=gen) < 0.2
    sums, mins = trees.make_sum_tree(32), trees.make_min_tree(32)
    trees.sum_min_tree_update_(sums, mins, torch.arange(32), torch.rand(32, generator=gen) + 0.1)
    index, uniform = torch.tensor([3, 7, 3]), torch.rand(8, generator=gen)
    eager = (sums.clone(), mins.clone())
    expected = _gae_then_sample(value, next_value, reward, done, *eager, index, uniform)
    compiled = torch.compile(_gae_then_sample, fullgraph=True, backend="aot_eager")
    got = compiled(value, next_value, reward, done, sums, mins, index, uniform)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(sums, eager[0])
    torch.testing.assert_close(mins, eager[1])
