import math

import pytest
import torch
from torch import nn

from rl_core.modules import MLP
from rl_objectives.modules import DuelingCnnDQNet, NoisyLinear, reset_noise


def _f(x: torch.Tensor) -> torch.Tensor:
    return x.sign() * x.abs().sqrt()


def test_noisy_linear_matches_factorised_reference_in_float64():
    layer = NoisyLinear(5, 3, dtype=torch.float64, std_init=0.4)
    # the init the paper and TorchRL define
    bound = 1 / math.sqrt(5)
    assert layer.weight_mu.abs().max() <= bound
    assert layer.bias_mu.abs().max() <= bound
    torch.testing.assert_close(layer.weight_sigma, torch.full((3, 5), 0.4 / math.sqrt(5)).double())
    torch.testing.assert_close(layer.bias_sigma, torch.full((3,), 0.4 / math.sqrt(3)).double())

    gen = torch.Generator().manual_seed(7)
    layer.reset_noise(generator=gen)
    ref_gen = torch.Generator().manual_seed(7)
    eps_in = _f(torch.randn(5, generator=ref_gen, dtype=torch.float64))
    eps_out = _f(torch.randn(3, generator=ref_gen, dtype=torch.float64))
    # epsilon is rank one: the outer product of the two scaled noise vectors
    torch.testing.assert_close(layer.weight_epsilon, eps_out[:, None] * eps_in[None, :])
    torch.testing.assert_close(layer.bias_epsilon, eps_out)

    x = torch.randn(4, 5, dtype=torch.float64)
    w = layer.weight_mu + layer.weight_sigma * (eps_out[:, None] * eps_in[None, :])
    b = layer.bias_mu + layer.bias_sigma * eps_out
    ref = (x[:, :, None] * w.T[None]).sum(1) + b
    torch.testing.assert_close(layer(x), ref)
    # the forward pass does not resample
    torch.testing.assert_close(layer(x), ref)

    layer.eval()
    torch.testing.assert_close(layer(x), x @ layer.weight_mu.T + layer.bias_mu)


def test_noisy_linear_gradients_reach_sigma_and_noise_changes_output():
    torch.manual_seed(0)
    layer = NoisyLinear(4, 2)
    x = torch.randn(6, 4)
    out = layer(x)
    out.sum().backward()
    assert layer.weight_sigma.grad is not None
    assert layer.weight_sigma.grad.abs().sum() > 0
    assert layer.bias_sigma.grad is not None
    layer.reset_noise()
    assert not torch.allclose(layer(x), out)


def test_noisy_linear_without_bias_and_in_mlp():
    layer = NoisyLinear(3, 2, bias=False)
    assert layer.bias is None
    assert layer(torch.randn(3)).shape == (2,)
    torch.manual_seed(0)
    net = MLP(3, 2, num_cells=[8], layer_class=NoisyLinear, layer_kwargs={"std_init": 0.5})
    noisy = [m for m in net if isinstance(m, NoisyLinear)]
    assert len(noisy) == 2
    before = [m.weight_epsilon.clone() for m in noisy]
    net.apply(reset_noise)
    assert all(not torch.equal(b, m.weight_epsilon) for b, m in zip(before, noisy, strict=True))


def test_noisy_linear_rejects_negative_std():
    with pytest.raises(ValueError, match="expected std_init >= 0, got -1"):
        NoisyLinear(2, 2, std_init=-1.0)


def test_dueling_defaults_follow_torchrl():
    net = DuelingCnnDQNet(4)
    convs = [m for m in net.features.layers if isinstance(m, nn.modules.conv._ConvNd)]
    assert [c.out_channels for c in convs] == [32, 64, 64]
    assert [c.kernel_size for c in convs] == [(8, 8), (4, 4), (3, 3)]
    assert [c.stride for c in convs] == [(4, 4), (2, 2), (1, 1)]
    out = net(torch.zeros(2, 4, 84, 84))
    assert out.shape == (2, 4)
    assert net.advantage[0].out_features == 512
    assert isinstance(net.advantage[1], nn.ELU)
    assert net.value[-1].out_features == 1


def test_dueling_combines_value_and_centred_advantage_in_float64():
    torch.manual_seed(0)
    net = DuelingCnnDQNet(
        5,
        cnn_kwargs={"in_features": 2, "num_cells": [4], "kernel_sizes": 3, "strides": 2},
        mlp_kwargs={"in_features": 4 * 3 * 3, "num_cells": 6},
    ).double()
    x = torch.randn(3, 7, 2, 7, 7, dtype=torch.float64)
    conv = net.features.layers[0]
    feats = nn.functional.elu(nn.functional.conv2d(x.flatten(0, 1), conv.weight, conv.bias, 2))
    feats = feats.flatten(1)

    def head(mlp):
        h = nn.functional.elu(feats @ mlp[0].weight.T + mlp[0].bias)
        return h @ mlp[2].weight.T + mlp[2].bias

    a, v = head(net.advantage), head(net.value)
    ref = (v + a - a.sum(-1, keepdim=True) / 5).reshape(3, 7, 5)
    torch.testing.assert_close(net(x), ref)


def test_dueling_rejects_bad_value_width():
    with pytest.raises(ValueError, match="out_features_value must be 1 or out_features"):
        DuelingCnnDQNet(4, out_features_value=3)
