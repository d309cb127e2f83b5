"""opcheck, autograd and torch.compile over the compiled kernels."""

from __future__ import annotations

import pytest
import torch

import rl_kernels  # noqa: F401  (registers the kernels)
from rl_core import ops
from rl_core.ops import reference

VALUE_OPS = (
    "generalized_advantage_estimate",
    "td_lambda_return_estimate",
    "vtrace_advantage_estimate",
)


def _samples(name, device, trajectory, op_args):
    if name in VALUE_OPS:
        data = trajectory(7, 3, seed=2)
        args = op_args(name, {k: v.to(device) for k, v in data.items()})
        # Float inputs with requires_grad exercise the autograd registration too.
        return [
            tuple(
                a.requires_grad_() if torch.is_tensor(a) and a.is_floating_point() else a
                for a in args
            )
        ]
    gen = torch.Generator().manual_seed(4)
    tree = torch.rand(16, generator=gen, dtype=torch.float64)
    reference.sum_tree_update_(
        tree, torch.arange(8), torch.rand(8, generator=gen, dtype=torch.float64)
    )
    index = torch.tensor([1, 5, 1], device=device)
    value = torch.tensor([0.5, 2.0, 3.0], dtype=torch.float64, device=device)
    if name == "sum_tree_find_prefixsum":
        return [
            (tree.to(device), torch.tensor([0.1, 1.0, 2.5], dtype=torch.float64, device=device))
        ]
    return [(tree.to(device), index, value)]


@pytest.mark.parametrize(
    "name",
    [*VALUE_OPS, "sum_tree_update_", "min_tree_update_", "sum_tree_find_prefixsum"],
)
def test_opcheck(device, name, trajectory, op_args):
    op = getattr(torch.ops.rl_core, name).default
    for args in _samples(name, device, trajectory, op_args):
        torch.library.opcheck(op, args)


def test_gradients_through_the_compiled_kernels(device, trajectory):
    # gradcheck compares the registered backward formulas with finite differences of the
    # forward pass, which runs the compiled kernels.
    data = {k: v.to(device) for k, v in trajectory(6, 2, seed=9).items()}
    floats = [
        data[k].clone().requires_grad_() for k in ("state_value", "next_state_value", "reward")
    ]

    def gae(value, next_value, reward):
        return ops.generalized_advantage_estimate(
            0.9, 0.8, value, next_value, reward, data["done"], data["terminated"], time_dim=0
        )

    def td_lambda(next_value, reward):
        return ops.td_lambda_return_estimate(
            0.9, 0.8, next_value, reward, data["done"], data["terminated"], time_dim=0
        )

    def vtrace(value, next_value, reward):
        return ops.vtrace_advantage_estimate(
            0.9,
            data["log_pi"],
            data["log_mu"],
            value,
            next_value,
            reward,
            data["done"],
            data["terminated"],
            time_dim=0,
        )

    assert torch.autograd.gradcheck(gae, floats)
    assert torch.autograd.gradcheck(td_lambda, floats[1:])
    assert torch.autograd.gradcheck(vtrace, floats)


def _advantage_then_sample(value, next_value, reward, done, tree, index, uniform):
    advantage, target = ops.generalized_advantage_estimate(
        0.99, 0.95, value, next_value, reward, done
    )
    lambda_return = ops.td_lambda_return_estimate(0.99, 0.95, next_value, reward, done)
    torch.ops.rl_core.sum_tree_update_(
        tree, index, advantage.abs().flatten()[: index.shape[0]].contiguous()
    )
    leaves = torch.ops.rl_core.sum_tree_find_prefixsum(tree, uniform * tree[1])
    return target, lambda_return, leaves


def test_torch_compile_of_a_caller_runs_the_kernels(device):
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(0)
    value, next_value, reward = (torch.randn(8, 50, 1, generator=gen).to(device) for _ in range(3))
    done = (torch.rand(8, 50, 1, generator=gen) < 0.1).to(device)
    tree = torch.zeros(128, device=device)  # a sum tree over 64 leaves
    torch.ops.rl_core.sum_tree_update_(
        tree, torch.arange(64, device=device), torch.rand(64, generator=gen).to(device)
    )
    index = torch.tensor([3, 9, 3, 40], device=device)
    uniform = torch.rand(32, generator=gen).to(device)
    eager_tree = tree.clone()
    expected = _advantage_then_sample(value, next_value, reward, done, eager_tree, index, uniform)
    compiled = torch.compile(_advantage_then_sample, fullgraph=True, backend="aot_eager")
    got = compiled(value, next_value, reward, done, tree, index, uniform)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
    torch.testing.assert_close(tree, eager_tree)
