import math

import pytest
import torch

from rl_objectives.modules import NoisyLazyLinear, NoisyLinear


def test_first_call_sizes_the_layer_and_it_becomes_a_noisy_linear():
    layer = NoisyLazyLinear(3, std_init=0.4)
    assert layer.has_uninitialized_params()
    x = torch.randn(5, 6)
    y = layer(x)
    assert type(layer) is NoisyLinear
    assert layer.in_features == 6
    assert y.shape == (5, 3)
    torch.testing.assert_close(layer.weight_sigma, torch.full((3, 6), 0.4 / math.sqrt(6)))
    assert layer.weight_mu.abs().max() <= 1 / math.sqrt(6)
    # training mode: the noisy weight; the noise is rank one (factorised)
    torch.testing.assert_close(
        y, x @ (layer.weight_mu + layer.weight_sigma * layer.weight_epsilon).T + layer.bias
    )
    assert torch.linalg.matrix_rank(layer.weight_epsilon) == 1
    layer.eval()
    torch.testing.assert_close(layer(x), x @ layer.weight_mu.T + layer.bias_mu)


def test_without_bias_and_noise_before_the_first_call():
    layer = NoisyLazyLinear(2, bias=False, dtype=torch.float64)
    layer.reset_noise()  # a no-op before the input size is known
    assert layer(torch.zeros(1, 4, dtype=torch.float64)).dtype == torch.float64
    assert layer.bias is None


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="out_features to be an integer >= 1, got 0"):
        NoisyLazyLinear(0)
    with pytest.raises(ValueError, match="std_init >= 0, got -1"):
        NoisyLazyLinear(2, std_init=-1)
