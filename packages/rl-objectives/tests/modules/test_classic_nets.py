"""TorchRL's fixed networks (DDPG's actors and critics, the dueling MLP, Conv3dNet, the shape
layers and the distributional log-softmax), checked on weights set by hand."""

import math

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rl_objectives.modules.conv3d import Conv3dNet
from rl_objectives.modules.ddpg_nets import (
    DdpgCnnActor,
    DdpgCnnQNet,
    DdpgMlpActor,
    DdpgMlpQNet,
    ddpg_init_last_layer,
)
from rl_objectives.modules.distributional_dqn_net import DistributionalDQNnet
from rl_objectives.modules.dueling_mlp import DuelingMlpDQNet
from rl_objectives.modules.net_layers import SquashDims, Squeeze2dLayer, SqueezeLayer


def test_shape_layers():
    x = torch.arange(24.0).reshape(1, 2, 3, 4)
    assert torch.equal(SquashDims()(x), torch.arange(24.0).reshape(1, 24))
    assert SquashDims(2)(x).shape == (1, 2, 12)
    assert SqueezeLayer()(torch.zeros(4, 3, 1)).shape == (4, 3)
    assert SqueezeLayer((-3, -1))(torch.zeros(4, 1, 3, 1)).shape == (4, 3)
    assert Squeeze2dLayer()(torch.zeros(4, 8, 1, 1)).shape == (4, 8)
    with pytest.raises(ValueError, match=r"cannot squeeze dim -1 of an input of shape \(4, 3\)"):
        SqueezeLayer()(torch.zeros(4, 3))
    with pytest.raises(ValueError, match=r"dims must be negative integers, got \(1,\)"):
        SqueezeLayer((1,))
    with pytest.raises(ValueError, match="ndims_in must be an integer >= 1, got 0"):
        SquashDims(0)


def test_conv3d_sums_blocks_by_hand():
    net = Conv3dNet(1, num_cells=[1], kernel_sizes=2, strides=2, activation_class=nn.Identity)
    with torch.no_grad():
        net.layers[0].weight.fill_(1.0)
        net.layers[0].bias.fill_(0.5)
    x = torch.arange(64.0).reshape(1, 4, 4, 4)  # [C, D, H, W], no batch dims
    out = net(x)
    # each output cell sums a 2x2x2 block: block (0, 0, 0) holds 0, 1, 4, 5, 16, 17, 20, 21
    assert out.shape == (8,)
    assert out[0].item() == 84 + 0.5
    assert out[7].item() == sum(x[0, 2:, 2:, 2:].flatten().tolist()) + 0.5
    lazy = Conv3dNet(num_cells=[4, 6], kernel_sizes=[3, (1, 2, 3)], aggregator_class=None)
    assert lazy(torch.zeros(2, 5, 3, 6, 6, 6)).shape == (2, 5, 6, 4, 3, 2)
    with pytest.raises(ValueError, match="strides has 2 entries for 3 layers"):
        Conv3dNet(num_cells=[4, 4, 4], strides=[1, 2])
    with pytest.raises(ValueError, match=r"expected an input of shape \[\*B, C, D, H, W\]"):
        net(torch.zeros(4, 4, 4))


def test_ddpg_init_last_layer_range_and_lazy_error():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 50), nn.ReLU(), nn.Linear(50, 40))
    ddpg_init_last_layer(net, scale=0.2)
    last = net[2]
    assert last.weight.abs().max() <= 0.1
    assert last.weight.std().item() == pytest.approx(0.2 / math.sqrt(12), rel=0.1)  # uniform's std
    assert net[0].weight.abs().max() > 0.1  # the first layer keeps its draw
    with pytest.raises(ValueError, match="last layer of Sequential is lazy"):
        ddpg_init_last_layer(nn.Sequential(nn.LazyLinear(4)))
    with pytest.raises(ValueError, match=r"holds no nn\.Linear or nn\.Conv2d"):
        ddpg_init_last_layer(nn.Sequential(nn.ReLU()))


def test_ddpg_mlp_nets_structure():
    torch.manual_seed(0)
    actor = DdpgMlpActor(3, mlp_net_kwargs={"in_features": 5})
    assert [m.out_features for m in actor.mlp if isinstance(m, nn.Linear)] == [400, 300, 3]
    assert actor.mlp[-1].weight.abs().max() <= 3e-3
    assert actor(torch.zeros(7, 5)).shape == (7, 3)
    q = DdpgMlpQNet()
    obs, action = torch.randn(4, 6), torch.randn(4, 2)
    value = q(obs, action)
    assert value.shape == (4, 1)
    # the action enters after the first (ELU, 400-wide) layer
    hidden = nn.functional.elu(q.mlp1[0](obs))
    assert torch.allclose(value, q.mlp2(torch.cat([hidden, action], -1)))
    assert q.mlp2[-1].weight.abs().max() <= 3e-3


def test_ddpg_cnn_nets_shapes():
    torch.manual_seed(0)
    actor = DdpgCnnActor(4)
    action, hidden = actor(torch.zeros(2, 3, 64, 64))
    # 64 -> (64 - 8) / 4 + 1 = 15 -> (15 - 4) / 2 + 1 = 6 -> 6 (padding 1): 64 * 6 * 6 = 2304
    assert hidden.shape == (2, 2304)
    assert action.shape == (2, 4)
    assert actor.mlp[-1].weight.abs().max() <= 3e-4
    q = DdpgCnnQNet()
    assert q(torch.zeros(2, 3, 64, 64), torch.zeros(2, 4)).shape == (2, 1)
    assert q.convnet(torch.zeros(2, 3, 64, 64)).shape == (2, 128)  # averaged feature maps


def test_dueling_mlp_by_hand():
    net = DuelingMlpDQNet(
        2,
        mlp_kwargs_feature={"in_features": 1, "num_cells": [], "out_features": 1,
                            "activation_class": nn.Identity},
        mlp_kwargs_output={"in_features": 1, "depth": 0},
    )  # fmt: skip
    with torch.no_grad():
        assert net.features[0].bias.item() == 0.0  # biases start at zero
        net.features[0].weight.fill_(2.0)
        net.advantage[0].weight.copy_(torch.tensor([[1.0], [3.0]]))
        net.value[0].weight.fill_(5.0)
    # f = 2, A = [2, 6] (mean 4), V = 10: Q = V + A - mean(A) = [8, 12]
    assert net(torch.ones(1, 1)).tolist() == [[8.0, 12.0]]
    assert DuelingMlpDQNet((3, 2))(torch.zeros(4, 5)).shape == (4, 3, 2)


def test_distributional_log_softmax_by_hand():
    logits = torch.zeros(1, 2, 2)
    logits[0, 1, 1] = math.log(3.0)  # action 1: atoms weighted 1 : 3
    td = DistributionalDQNnet(in_keys=["q"], out_keys=["log_p"])(
        TensorDict(q=logits, batch_size=[1])
    )
    expected = torch.log(torch.tensor([[[0.5, 0.25], [0.5, 0.75]]]))
    torch.testing.assert_close(td["log_p"], expected)
    with pytest.raises(ValueError, match=r"'q' must be \[\*B, atoms, actions\], got shape \(3,\)"):
        DistributionalDQNnet(in_keys=["q"])(TensorDict(q=torch.zeros(3)))
