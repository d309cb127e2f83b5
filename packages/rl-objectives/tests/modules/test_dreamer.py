"""Dreamer's observation encoder/decoder and actor: shapes, the defined layer arithmetic, errors."""

import math

import pytest
import torch
from torch.nn import functional as F

from rl_objectives.modules import DreamerActor, ObsDecoder, ObsEncoder


def test_pixel_encoder_shapes_and_layers():
    enc = ObsEncoder(in_channels=3)
    convs = [m for m in enc.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [32, 64, 128, 256]
    assert all(c.kernel_size == (4, 4) and c.stride == (2, 2) for c in convs)
    assert enc(torch.zeros(3, 64, 64)).shape == (1024,)
    assert enc(torch.zeros(2, 5, 3, 64, 64)).shape == (2, 5, 1024)
    lazy = ObsEncoder(channels=4, num_layers=2)
    assert lazy(torch.zeros(7, 1, 16, 16)).shape == (7, 8 * 2 * 2)


def test_pixel_encoder_matches_a_plain_convolution_stack():
    torch.manual_seed(0)
    enc = ObsEncoder(channels=2, num_layers=2, in_channels=1).double()
    x = torch.randn(3, 4, 1, 10, 10, dtype=torch.float64)
    c1, c2 = (m for m in enc.modules() if isinstance(m, torch.nn.Conv2d))
    flat = x.reshape(12, 1, 10, 10)
    y = F.relu(F.conv2d(F.relu(F.conv2d(flat, c1.weight, c1.bias, stride=2)), c2.weight, c2.bias,
                        stride=2))  # fmt: skip
    torch.testing.assert_close(enc(x), y.reshape(3, 4, -1))


def test_vector_encoder_and_decoder():
    enc = ObsEncoder(channels=4, num_layers=3, in_features=3)
    assert enc(torch.zeros(5, 2, 3)).shape == (5, 2, 32)
    dec = ObsDecoder(channels=4, num_layers=3, latent_dim=9, out_features=3)
    assert dec(torch.zeros(5, 2, 4), torch.zeros(5, 2, 5)).shape == (5, 2, 3)
    linears = [m for m in dec.modules() if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(9, 32), (32, 32), (32, 3)]


def test_pixel_decoder_shapes():
    dec = ObsDecoder(latent_dim=30 + 200)
    out = dec(torch.zeros(2, 3, 30), torch.zeros(2, 3, 200))
    assert out.shape == (2, 3, 3, 64, 64)
    convs = [m for m in dec.modules() if isinstance(m, torch.nn.ConvTranspose2d)]
    assert [c.kernel_size[0] for c in convs] == [5, 5, 6, 6]
    assert [c.out_channels for c in convs] == [128, 64, 32, 3]
    assert ObsDecoder(channels=2, num_layers=2, out_channels=1)(
        torch.zeros(4, 3), torch.zeros(4, 2)
    ).shape == (4, 1, 13, 13)


def test_encoder_decoder_errors_and_deprecated_depth():
    with pytest.raises(ValueError, match=r"ObsDecoder: expected 4 kernel_sizes .* got \[5, 5\]"):
        ObsDecoder(kernel_sizes=[5, 5])
    with pytest.raises(ValueError, match=r"ObsEncoder: expected num_layers as a positive int"):
        ObsEncoder(num_layers=0)
    with pytest.raises(ValueError, match=r"ObsEncoder: expected pixels shaped \[\*B, C, H, W\]"):
        ObsEncoder(in_channels=3)(torch.zeros(4, 3))
    with pytest.warns(DeprecationWarning, match="depth is an old name of channels"):
        enc = ObsEncoder(depth=4, num_layers=1, in_channels=1)
    assert next(m for m in enc.modules() if isinstance(m, torch.nn.Conv2d)).out_channels == 4


def test_actor_biased_softplus_scale():
    actor = DreamerActor(2, depth=1, num_cells=8, in_features=6, std_bias=5.0, std_min_val=1e-4)
    last = actor.backbone[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(torch.tensor([0.5, -0.5, 0.0, 1.0]))
    loc, scale = actor(torch.zeros(3, 2), torch.zeros(3, 4))
    torch.testing.assert_close(loc, torch.tensor([[0.5, -0.5]]).expand(3, 2))
    # scale = softplus(x + b) + min with softplus(b) + min = std_bias
    b = math.log(math.expm1(5.0 - 1e-4))
    want = torch.tensor([math.log1p(math.exp(0.0 + b)), math.log1p(math.exp(1.0 + b))]) + 1e-4
    torch.testing.assert_close(scale, want.expand(3, 2))
    assert abs(scale[0, 0].item() - 5.0) < 1e-5


def test_actor_errors():
    with pytest.raises(ValueError, match=r"DreamerActor: expected std_bias > std_min_val"):
        DreamerActor(1, std_bias=0.1, std_min_val=0.5)
    assert DreamerActor(3, depth=2, num_cells=4)(torch.zeros(2, 1), torch.zeros(2, 2))[0].shape == (
        2,
        3,
    )
