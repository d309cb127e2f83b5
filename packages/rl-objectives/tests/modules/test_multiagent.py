import copy

import pytest
import torch
from torch import nn

from rl_core.modules import MLP
from rl_objectives.modules import MultiAgentMLP

N_AGENTS, N_IN, N_OUT = 3, 4, 2


def _agent_mlp(net: MultiAgentMLP, agent: int) -> MLP:
    """A plain MLP that holds agent `agent`'s slice of the stacked parameters."""
    in_features = N_IN * N_AGENTS if net.centralized else N_IN
    mlp = MLP(in_features, N_OUT, depth=2, num_cells=8)
    net.params[agent].to_module(mlp)
    return mlp


@pytest.mark.parametrize("centralized", [False, True])
def test_independent_params_match_a_loop_over_agents(centralized):
    torch.manual_seed(0)
    net = MultiAgentMLP(
        N_IN, N_OUT, N_AGENTS, centralized=centralized, share_params=False, depth=2, num_cells=8
    )
    x = torch.randn(5, 7, N_AGENTS, N_IN)
    out = net(x)
    assert out.shape == (5, 7, N_AGENTS, N_OUT)
    for i in range(N_AGENTS):
        agent_in = x.flatten(-2) if centralized else x[..., i, :]
        torch.testing.assert_close(out[..., i, :], _agent_mlp(net, i)(agent_in))
    # the agents do not share weights: same input, different outputs
    same = net(x[..., :1, :].expand_as(x).contiguous())
    assert not torch.allclose(same[..., 0, :], same[..., 1, :])


def test_shared_decentralised_applies_one_net_per_agent():
    torch.manual_seed(0)
    net = MultiAgentMLP(N_IN, N_OUT, N_AGENTS, centralized=False, share_params=True)
    x = torch.randn(6, N_AGENTS, N_IN)
    out = net(x)
    for i in range(N_AGENTS):
        torch.testing.assert_close(out[:, i], net.net(x[:, i]))
    assert net.params is None


def test_shared_centralised_gives_every_agent_one_output_of_all_inputs():
    # TorchRL: one MLP from the joint input to n_agent_outputs, the same for every agent
    torch.manual_seed(0)
    net = MultiAgentMLP(N_IN, N_OUT, N_AGENTS, centralized=True, share_params=True)
    assert net.net[0].in_features == N_IN * N_AGENTS
    assert net.net[-1].out_features == N_OUT
    x = torch.randn(6, N_AGENTS, N_IN)
    out = net(x)
    assert out.shape == (6, N_AGENTS, N_OUT)
    joint = net.net(x.flatten(-2))
    for i in range(N_AGENTS):
        torch.testing.assert_close(out[:, i], joint)
    # changing one agent's input changes every agent's output
    x2 = x.clone()
    x2[:, 0] += 1
    assert (net(x2) - out).abs().amax(dim=(0, 2)).gt(0).all()


def test_parameter_counts():
    def count(module):
        return sum(p.numel() for p in module.parameters())

    kwargs = {"depth": 1, "num_cells": 5}
    shared = MultiAgentMLP(N_IN, N_OUT, N_AGENTS, centralized=False, share_params=True, **kwargs)
    indep = MultiAgentMLP(N_IN, N_OUT, N_AGENTS, centralized=False, share_params=False, **kwargs)
    single = (N_IN * 5 + 5) + (5 * N_OUT + N_OUT)
    assert count(shared) == single
    assert count(indep) == N_AGENTS * single


def test_gradients_reach_every_agent_and_deepcopy_is_independent():
    net = MultiAgentMLP(N_IN, N_OUT, N_AGENTS, centralized=False, share_params=False)
    net(torch.randn(4, N_AGENTS, N_IN)).sum().backward()
    grads = [p.grad for p in net.parameters()]
    assert all(g is not None and g.abs().flatten(1).sum(1).gt(0).all() for g in grads[:1])
    clone = copy.deepcopy(net)
    with torch.no_grad():
        for p in clone.parameters():
            p.zero_()
    assert net(torch.ones(1, N_AGENTS, N_IN)).abs().sum() > 0
    assert clone(torch.ones(1, N_AGENTS, N_IN)).abs().sum() == 0


def test_dropout_runs_under_vmap():
    net = MultiAgentMLP(N_IN, N_OUT, N_AGENTS, centralized=False, share_params=False, dropout=0.5)
    assert net(torch.randn(4, N_AGENTS, N_IN)).shape == (4, N_AGENTS, N_OUT)
    assert any(isinstance(m, nn.Dropout) for m in net.__dict__["_template"])


def test_wrong_input_shape():
    net = MultiAgentMLP(N_IN, N_OUT, N_AGENTS, centralized=False, share_params=True)
    with pytest.raises(
        ValueError, match=r"expected an input ending in .*=\[3, 4\], got shape \[5, 4\]"
    ):
        net(torch.zeros(5, N_IN))
    with pytest.raises(ValueError, match="expected a positive int n_agents, got 0"):
        MultiAgentMLP(N_IN, N_OUT, 0, centralized=False, share_params=True)
