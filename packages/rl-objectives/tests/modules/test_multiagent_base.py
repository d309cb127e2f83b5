"""MultiAgentNetBase: every layout against a loop over the agents' own networks."""

import pytest
import torch
from torch import nn

from rl_objectives.modules import MultiAgentNetBase


class AgentLinear(MultiAgentNetBase):
    def __init__(self, n_in, n_out, **kwargs):
        self.n_in, self.n_out = n_in, n_out
        super().__init__(**kwargs)

    def _build_single_net(self, *, device):
        n_in = self.n_in * (self.n_agents if self.centralized else 1)
        return nn.Linear(n_in, self.n_out, device=device, dtype=torch.float64)

    def _pre_forward_check(self, inputs):
        if self.centralized:
            return inputs.flatten(-2, -1)
        return inputs


def _weights(net, agent):
    w, b = net.params["weight"], net.params["bias"]
    return (w, b) if net.share_params else (w[agent], b[agent])


@pytest.mark.parametrize("centralized", [False, True])
@pytest.mark.parametrize("share_params", [False, True])
def test_each_layout_is_the_loop_over_agents(centralized, share_params):
    torch.manual_seed(0)
    net = AgentLinear(
        3, 2, n_agents=4, centralized=centralized, share_params=share_params, agent_dim=-2
    )
    x = torch.randn(5, 4, 3, dtype=torch.float64)
    out = net(x)
    assert out.shape == (5, 4, 2)
    for agent in range(4):
        w, b = _weights(net, agent)
        inp = x.flatten(-2, -1) if centralized else x[:, agent]
        torch.testing.assert_close(out[:, agent], inp @ w.T + b)
    params = list(net.parameters())
    assert sum(p.numel() for p in params) == (1 if share_params else 4) * (
        (12 if centralized else 3) * 2 + 2
    )


def test_several_inputs_are_concatenated_and_stateful_nets_initialise_in_place():
    net = AgentLinear(3, 2, n_agents=2, centralized=False, share_params=False, agent_dim=-2)
    a, b = torch.randn(7, 2, 1, dtype=torch.float64), torch.randn(7, 2, 2, dtype=torch.float64)
    torch.testing.assert_close(net(a, b), net(torch.cat([a, b], -1)))
    stateful = net.get_stateful_net()
    stateful.apply(lambda m: nn.init.zeros_(m.weight) if isinstance(m, nn.Linear) else None)
    assert (net.params["weight"] == 0).all()
    replacement = net.get_stateful_net()
    replacement.weight = nn.Parameter(torch.ones_like(replacement.weight))
    net.from_stateful_net(replacement)
    assert (net.params["weight"] == 1).all()


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="keyword argument share_params must be given"):
        AgentLinear(3, 2, n_agents=2, centralized=False, agent_dim=-2)
    with pytest.raises(ValueError, match="n_agents to be an integer >= 1, got 0"):
        AgentLinear(3, 2, n_agents=0, centralized=False, share_params=True, agent_dim=-2)
    with pytest.raises(ValueError, match="vmap_randomness 'different', 'same' or 'error', got 'x'"):
        AgentLinear(
            3,
            2,
            n_agents=2,
            centralized=False,
            share_params=True,
            agent_dim=-2,
            vmap_randomness="x",
        )
    net = AgentLinear(3, 2, n_agents=2, centralized=False, share_params=True, agent_dim=-2)
    with pytest.raises(
        ValueError, match=r"expected an output with 2 agents at dim 1, got shape \(5, 3, 2\)"
    ):
        net(torch.zeros(5, 3, 3, dtype=torch.float64))
    other = AgentLinear(4, 2, n_agents=2, centralized=False, share_params=True, agent_dim=-2)
    with pytest.raises(ValueError, match=r"expected 'weight' of shape \(2, 3\), got \(2, 4\)"):
        net.from_stateful_net(other.get_stateful_net())
