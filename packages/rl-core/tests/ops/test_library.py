"""The rl_core op registrations: opcheck on every op, and kernel overriding by dispatch key."""

from __future__ import annotations

import pytest
import torch

import rl_core.ops as ops
from rl_core.ops import _library, reference


def _value_args(name, steps, batch, dtype, requires_grad):
    gen = torch.Generator().manual_seed(steps * 100 + batch)

    def floats():
        return torch.randn(steps, batch, generator=gen, dtype=dtype).requires_grad_(requires_grad)

    done = torch.rand(steps, batch, generator=gen) < 0.3
    terminated = done & (torch.rand(steps, batch, generator=gen) < 0.5)
    if name == "generalized_advantage_estimate":
        return (0.99, 0.95, floats(), floats(), floats(), done, terminated)
    if name == "td_lambda_return_estimate":
        return (0.9, 0.7, floats(), floats(), done, terminated)
    log_mu = floats().detach()
    return (0.95, 1.0, 0.9, floats(), log_mu, floats(), floats(), floats(), done, terminated)


def _tree_args(name, capacity, batch, dtype):
    gen = torch.Generator().manual_seed(capacity + batch)
    tree = torch.zeros(2 * capacity, dtype=dtype)
    reference.sum_tree_update_(
        tree, torch.arange(capacity), torch.rand(capacity, generator=gen, dtype=dtype)
    )
    if name == "sum_tree_find_prefixsum":
        return (tree, torch.rand(batch, generator=gen, dtype=dtype) * tree[1])
    index = torch.randint(0, capacity, (batch,), generator=gen)
    if name in ("sum_min_tree_update_", "sum_tree_sample", "sum_min_tree_priority_update_"):
        min_tree = torch.full((2 * capacity,), float("inf"), dtype=dtype)
        reference.min_tree_update_(min_tree, torch.arange(capacity), tree[capacity:])
        if name == "sum_tree_sample":
            return (tree, min_tree, torch.rand(batch, generator=gen, dtype=dtype), 0.6)
        if name == "sum_min_tree_priority_update_":
            top = torch.ones(1, dtype=dtype)
            priority = torch.rand(batch, generator=gen, dtype=dtype) * 3
            return (tree, min_tree, top, index, priority, 1e-3, 0.7, capacity)
        return (tree, min_tree, index, torch.rand(batch, generator=gen, dtype=dtype))
    return (tree, index, torch.rand(batch, generator=gen, dtype=dtype))


TREE_OPS = (
    "sum_tree_update_",
    "min_tree_update_",
    "sum_tree_find_prefixsum",
    "sum_min_tree_update_",
    "sum_tree_sample",
    "sum_min_tree_priority_update_",
)


def _gather_args(rows, batch, dtype):
    gen = torch.Generator().manual_seed(rows + batch)
    tables = [
        torch.randn(rows, 3, generator=gen, dtype=dtype),
        torch.randn(rows, generator=gen, dtype=dtype),
        torch.rand(rows, 2, 1, generator=gen) < 0.5,
        torch.randint(0, 9, (rows, 4), generator=gen)[:, ::2],  # strided rows
    ]
    return (tables, torch.randint(0, rows, (batch,), generator=gen))


def _samples(name):
    if name == "gather_rows":
        return [_gather_args(r, b, d) for r, b, d in [(1, 1, torch.float32), (9, 5, torch.float64)]]
    if name in TREE_OPS:
        return [
            _tree_args(name, c, k, d)
            for c, k, d in [(1, 1, torch.float32), (8, 5, torch.float32), (16, 9, torch.float64)]
        ]
    return [
        _value_args(name, t, n, d, g)
        for t, n, d, g in [
            (1, 1, torch.float32, False),
            (6, 3, torch.float32, False),
            (5, 2, torch.float64, True),
        ]
    ]


SAMPLES = {name: _samples(name) for name in _library.SCHEMAS}


@pytest.mark.parametrize("name", sorted(_library.SCHEMAS))
def test_opcheck(name):
    op = getattr(torch.ops.rl_core, name).default
    for args in SAMPLES[name]:
        torch.library.opcheck(op, args)


def test_every_op_is_declared_in_the_rl_core_namespace():
    for name, schema in _library.SCHEMAS.items():
        op = getattr(torch.ops.rl_core, name).default
        assert str(op._schema) == f"rl_core::{name}{schema}"


def _public_call(name):
    """Calls op ``name`` (through its rl-core wrapper where it has one); returns what to compare."""
    traj_shape = (2, 6, 1)
    gen = torch.Generator().manual_seed(7)
    x = [torch.randn(traj_shape, generator=gen) for _ in range(5)]
    done = torch.zeros(traj_shape, dtype=torch.bool)
    if name == "generalized_advantage_estimate":
        return ops.generalized_advantage_estimate(0.9, 0.9, x[0], x[1], x[2], done)[0]
    if name == "td_lambda_return_estimate":
        return ops.td_lambda_return_estimate(0.9, 0.9, x[0], x[1], done)
    if name == "vtrace_advantage_estimate":
        return ops.vtrace_advantage_estimate(0.9, x[0], x[1], x[2], x[3], x[4], done)[0]
    if name == "gather_rows":
        return ops.gather_rows([torch.arange(8.0).reshape(4, 2)], torch.tensor([3, 1]))
    # The tree ops' wrappers live in rl-buffers (rl_buffers.trees): here the ops themselves.
    tree_ops = torch.ops.rl_core
    sums, mins = torch.zeros(8), torch.full((8,), float("inf"))
    index, value = torch.tensor([1, 2]), torch.tensor([3.0, 4.0])
    if name == "sum_tree_find_prefixsum":
        tree_ops.sum_tree_update_(sums, torch.arange(4), torch.ones(4))
        return tree_ops.sum_tree_find_prefixsum(sums, torch.tensor([0.5, 2.5]))
    if name == "sum_tree_sample":
        tree_ops.sum_min_tree_update_(sums, mins, torch.arange(4), torch.tensor([1.0, 2, 0.5, 4]))
        return tree_ops.sum_tree_sample(sums, mins, torch.tensor([0.1, 0.5, 0.9]), 0.5)
    if name == "sum_min_tree_priority_update_":
        tree_ops.sum_min_tree_priority_update_(sums, mins, torch.ones(1), index, value, 0.5, 0.7, 4)
        return sums, mins
    if name == "sum_min_tree_update_":
        tree_ops.sum_min_tree_update_(sums, mins, index, value)
        return sums, mins
    tree = sums if name == "sum_tree_update_" else mins
    getattr(tree_ops, name)(tree, index, value)
    return tree


@pytest.mark.parametrize("name", sorted(_library.SCHEMAS))
def test_a_cpu_kernel_registered_later_overrides_the_reference(name):
    """What rl-kernels does: register for the CPU key in an IMPL library of "rl_core"."""
    calls = []

    def cpu_kernel(*args):
        calls.append(name)
        return getattr(reference, name)(*args)

    expected = _public_call(name)
    with torch.library._scoped_library("rl_core", "IMPL") as lib:
        lib.impl(name, cpu_kernel, "CPU")
        torch.testing.assert_close(_public_call(name), expected)
        assert calls == [name]
    _public_call(name)
    assert calls == [name], "the reference kernel is back once the override is removed"


def test_an_override_changes_results_and_keeps_autograd():
    value = torch.zeros(1, 3, 1, requires_grad=True)
    next_value = torch.zeros(1, 3, 1)
    reward = torch.ones(1, 3, 1)
    done = torch.zeros(1, 3, 1, dtype=torch.bool)

    def shifted_gae(*args):
        advantage, target = reference.generalized_advantage_estimate(*args)
        return advantage + 100.0, target + 100.0

    with torch.library._scoped_library("rl_core", "IMPL") as lib:
        lib.impl("generalized_advantage_estimate", shifted_gae, "CPU")
        advantage, _ = ops.generalized_advantage_estimate(0.5, 1.0, value, next_value, reward, done)
        assert advantage.flatten().tolist() == [101.75, 101.5, 101.0]
        advantage.sum().backward()
    # sum(A) = delta[0] + 1.5 delta[1] + 1.75 delta[2] and d delta[t] / d V[t] = -1.
    assert value.grad is not None
    assert value.grad.flatten().tolist() == [-1.0, -1.5, -1.75]
    advantage, _ = ops.generalized_advantage_estimate(0.5, 1.0, value, next_value, reward, done)
    assert advantage.flatten().tolist() == [1.75, 1.5, 1.0]


def test_direct_op_calls_check_the_kernel_layout():
    x = torch.zeros(2, 3, 1)
    flags = torch.zeros(2, 3, 1, dtype=torch.bool)
    with pytest.raises(
        RuntimeError,
        match=r"rl_core::generalized_advantage_estimate: expected state_value in the \[T, N\] "
        r"layout \(2-D\), got shape \(2, 3, 1\)",
    ):
        torch.ops.rl_core.generalized_advantage_estimate(0.9, 0.9, x, x, x, flags, flags)
    with pytest.raises(
        RuntimeError,
        match=r"rl_core::generalized_advantage_estimate: expected reward of shape \(2, 3\) like "
        r"state_value, got \(3, 2\)",
    ):
        torch.ops.rl_core.generalized_advantage_estimate(
            0.9, 0.9, x[..., 0], x[..., 0], torch.zeros(3, 2), flags[..., 0], flags[..., 0]
        )
    with pytest.raises(RuntimeError, match=r"expected done of dtype torch.bool, got torch.float32"):
        torch.ops.rl_core.td_lambda_return_estimate(0.9, 0.9, x[0], x[0], x[0], flags[0])
    with pytest.raises(RuntimeError, match=r"rl_core::sum_tree_find_prefixsum: expected value 1-D"):
        torch.ops.rl_core.sum_tree_find_prefixsum(
            torch.zeros(8), torch.zeros(2, dtype=torch.float64)
        )


def test_ops_run_on_meta_tensors():
    x = torch.empty(7, 5, device="meta")
    flags = torch.empty(7, 5, device="meta", dtype=torch.bool)
    advantage, target = torch.ops.rl_core.generalized_advantage_estimate(
        0.9, 0.9, x, x, x, flags, flags
    )
    assert advantage.shape == target.shape == (7, 5)
    found = torch.ops.rl_core.sum_tree_find_prefixsum(torch.empty(16, device="meta"), x[0])
    assert found.shape == (5,)
    assert found.dtype == torch.int64


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", sorted(_library.SCHEMAS))
def test_opcheck_and_cpu_agreement_on_cuda(name):
    op = getattr(torch.ops.rl_core, name).default

    def moved(a, move):
        if isinstance(a, (list, tuple)):  # gather_rows' tables
            return type(a)(moved(x, move) for x in a)
        return move(a).requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a

    for args in SAMPLES[name]:
        cuda_args = tuple(moved(a, lambda t: t.detach().cuda()) for a in args)
        torch.library.opcheck(op, cuda_args)
        cpu_args = tuple(moved(a, lambda t: t.detach().clone()) for a in args)
        cpu_out, cuda_out = op(*cpu_args), op(*cuda_args)
        torch.testing.assert_close(cuda_out, cpu_out, check_device=False)
        torch.testing.assert_close(cuda_args[0], cpu_args[0], check_device=False)
