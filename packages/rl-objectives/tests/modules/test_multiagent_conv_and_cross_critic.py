"""MultiAgentConvNet and CrossGroupCritic against hand-written float64 references."""

import pytest
import torch
import torch.nn.functional as F
from tensordict import TensorDict
from torch import nn

from rl_objectives.modules import CrossCriticGroupSpec, CrossGroupCritic, MultiAgentConvNet


def _conv_reference(weights, x):
    # One ConvNet by definition: conv2d (stride 1, no padding) + ELU per layer, then flatten.
    y = x
    for w, b in weights:
        y = F.elu(F.conv2d(y, w, b))
    return y.flatten(1)


def _agent_weights(net, agent):
    params = net.params[agent] if net.params is not None else None
    module = net.net
    convs = []
    if params is not None:
        layers = params["layers"]
        for i in sorted(int(k) for k in layers.keys()):
            if "weight" in layers[str(i)].keys():
                convs.append((layers[str(i), "weight"].double(), layers[str(i), "bias"].double()))
    else:
        for layer in module.layers:
            if isinstance(layer, nn.Conv2d):
                convs.append((layer.weight.double(), layer.bias.double()))
    return convs


@pytest.mark.parametrize("centralized", [False, True])
@pytest.mark.parametrize("share_params", [False, True])
def test_multi_agent_convnet_matches_per_agent_convolutions(centralized, share_params):
    torch.manual_seed(0)
    n_agents, channels = 3, 2
    net = MultiAgentConvNet(
        n_agents,
        centralized=centralized,
        share_params=share_params,
        in_features=channels,
        num_cells=[4, 5],
        kernel_sizes=3,
        strides=1,
    )
    x = torch.randn(7, n_agents, channels, 6, 6)
    out = net(x)
    assert out.shape == (7, n_agents, 5 * 2 * 2)
    xd = x.double()
    for agent in range(n_agents):
        weights = _agent_weights(net, 0 if share_params else agent)
        inp = xd.flatten(1, 2) if centralized else xd[:, agent]
        torch.testing.assert_close(
            out[:, agent].double(), _conv_reference(weights, inp), atol=1e-5, rtol=1e-5
        )
    if not share_params:
        # Independent agents differ; their outputs are not copies.
        assert not torch.allclose(out[:, 0], out[:, 1])
    # Extra leading dims are kept.
    assert net(torch.randn(2, 4, n_agents, channels, 6, 6)).shape == (2, 4, n_agents, 20)


def test_multi_agent_convnet_errors():
    with pytest.raises(ValueError, match="need in_features"):
        MultiAgentConvNet(2, centralized=False, share_params=False)
    net = MultiAgentConvNet(2, centralized=False, share_params=True, in_features=1, num_cells=[2])
    with pytest.raises(ValueError, match="n_agents=2"):
        net(torch.zeros(4, 3, 1, 8, 8))
    with pytest.raises(ValueError, match="expected 1 channels per agent"):
        net(torch.zeros(4, 2, 3, 8, 8))
    with pytest.raises(ValueError, match="positive int n_agents"):
        MultiAgentConvNet(0, centralized=False, share_params=True)


def _groups():
    return {
        "red": CrossCriticGroupSpec(3, 2, ("red", "observation"), ("red", "state_value")),
        "blue": CrossCriticGroupSpec(5, 1, ("blue", "observation"), ("blue", "state_value")),
    }


def _critic_reference(critic, red, blue, *, shared):
    net = critic.module
    d = {k: v.double() for k, v in net.state_dict().items()}

    def enc(name, obs):
        return torch.tanh(
            obs.double() @ d[f"encoders.{name}.0.weight"].T + d[f"encoders.{name}.0.bias"]
        )

    team = torch.cat([enc("red", red).flatten(-2), enc("blue", blue).flatten(-2)], -1)
    h = torch.tanh(team @ d["trunk.0.weight"].T + d["trunk.0.bias"])
    h = torch.tanh(h @ d["trunk.2.weight"].T + d["trunk.2.bias"])
    if shared:
        v = h @ d["heads.team.weight"].T + d["heads.team.bias"]
        return v[:, None].expand(-1, 2, 1), v[:, None]
    red_v = (h @ d["heads.red.weight"].T + d["heads.red.bias"])[..., None]
    blue_v = (h @ d["heads.blue.weight"].T + d["heads.blue.bias"])[..., None]
    return red_v, blue_v


@pytest.mark.parametrize("shared", [False, True])
def test_cross_group_critic_matches_the_definition(shared):
    torch.manual_seed(0)
    critic = CrossGroupCritic(_groups(), d_model=4, trunk_cells=8, share_params=shared)
    red, blue = torch.randn(6, 2, 3), torch.randn(6, 1, 5)
    td = TensorDict({("red", "observation"): red, ("blue", "observation"): blue}, batch_size=[6])
    out = critic(td)
    ref_red, ref_blue = _critic_reference(critic, red, blue, shared=shared)
    torch.testing.assert_close(out["red", "state_value"].double(), ref_red, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out["blue", "state_value"].double(), ref_blue, atol=1e-5, rtol=1e-5)
    # Each group's value depends on the other group's observations (the team state).
    td2 = td.clone()
    td2["blue", "observation"] = blue + 1.0
    assert not torch.allclose(critic(td2)["red", "state_value"], out["red", "state_value"])


def test_detached_group_gets_no_gradient_but_still_informs_the_values():
    torch.manual_seed(0)
    critic = CrossGroupCritic(_groups(), d_model=4, trunk_cells=8, detach_groups=["blue"])
    blue = torch.randn(6, 1, 5, requires_grad=True)
    td = TensorDict(
        {("red", "observation"): torch.randn(6, 2, 3), ("blue", "observation"): blue},
        batch_size=[6],
    )
    out = critic(td)
    loss = out["red", "state_value"].square().sum() + out["blue", "state_value"].square().sum()
    loss.backward()
    enc = critic.module.encoders
    assert enc["blue"][0].weight.grad is None
    assert blue.grad is None
    assert enc["red"][0].weight.grad.abs().sum() > 0
    td2 = td.detach().clone()
    td2["blue", "observation"] = blue.detach() + 1.0
    assert not torch.allclose(critic(td2)["red", "state_value"], out["red", "state_value"].detach())


def test_cross_group_critic_errors():
    with pytest.raises(ValueError, match="non-empty mapping"):
        CrossGroupCritic({})
    with pytest.raises(TypeError, match="expected a CrossCriticGroupSpec for group 'a'"):
        CrossGroupCritic({"a": (3, 2)})
    with pytest.raises(ValueError, match="not groups of group_map"):
        CrossGroupCritic(_groups(), detach_groups=["green"])
    with pytest.raises(ValueError, match="obs_dim > 0"):
        CrossGroupCritic({"a": CrossCriticGroupSpec(0, 2, "o", "v")})
    critic = CrossGroupCritic(_groups(), d_model=2, trunk_cells=4)
    td = TensorDict(
        {
            ("red", "observation"): torch.zeros(3, 2, 4),
            ("blue", "observation"): torch.zeros(3, 1, 5),
        },
        batch_size=[3],
    )
    with pytest.raises(ValueError, match=r"group 'red'.*\[2, 3\], got shape \[3, 2, 4\]"):
        critic(td)
