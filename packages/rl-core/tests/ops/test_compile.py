"""torch.compile traces the public wrappers and the ops in one graph (fake kernels).

The tree ops are called as ``torch.ops.rl_core.<name>``: their wrappers live in rl-buffers
(``rl_buffers.trees``), whose tests compile them.
"""

from __future__ import annotations

import pytest
import torch

from rl_core.ops import (
    generalized_advantage_estimate,
    td_lambda_return_estimate,
    vtrace_advantage_estimate,
)

_trees = torch.ops.rl_core


def _gae_then_sample(value, next_value, reward, done, tree, uniform):
    advantage, target = generalized_advantage_estimate(0.99, 0.95, value, next_value, reward, done)
    leaves = _trees.sum_tree_find_prefixsum(tree, uniform * tree[1])
    return advantage, target, leaves


def _inputs():
    gen = torch.Generator().manual_seed(0)
    value, next_value, reward = (torch.randn(4, 16, 1, generator=gen) for _ in range(3))
    done = torch.rand(4, 16, 1, generator=gen) < 0.2
    tree = torch.zeros(64)
    _trees.sum_tree_update_(tree, torch.arange(32), torch.rand(32, generator=gen))
    return value, next_value, reward, done, tree, torch.rand(8, generator=gen)


def _every_op(value, next_value, reward, done, tree, uniform, index):
    advantage, target = generalized_advantage_estimate(0.9, 0.9, value, next_value, reward, done)
    lambda_return = td_lambda_return_estimate(0.9, 0.5, next_value, reward, done)
    vtrace_advantage, _ = vtrace_advantage_estimate(
        0.9, reward, value, value, next_value, reward, done
    )
    _trees.sum_tree_update_(tree, index, advantage.abs().flatten()[: index.shape[0]].contiguous())
    leaves = _trees.sum_tree_find_prefixsum(tree, uniform * tree[1])
    return target, lambda_return, vtrace_advantage, leaves


def test_aot_eager_fullgraph_traces_every_op_through_its_fake_kernel():
    torch._dynamo.reset()
    value, next_value, reward, done, tree, uniform = _inputs()
    index = torch.tensor([3, 7, 3])
    eager_tree = tree.clone()
    expected = _every_op(value, next_value, reward, done, eager_tree, uniform, index)
    compiled = torch.compile(_every_op, fullgraph=True, backend="aot_eager")
    got = compiled(value, next_value, reward, done, tree, uniform, index)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(tree, eager_tree)


@pytest.mark.slow
@pytest.mark.compile
@pytest.mark.filterwarnings("ignore:.*script_method.*:DeprecationWarning")
def test_inductor_fullgraph_gae_and_prefixsum_search():
    torch._dynamo.reset()
    args = _inputs()
    compiled = torch.compile(_gae_then_sample, fullgraph=True)
    for a, b in zip(compiled(*args), _gae_then_sample(*args)):
        torch.testing.assert_close(a, b)
