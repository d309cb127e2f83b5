"""DreamerV3ImageEncoder and DreamerV3ImageDecoder against float64 references written from
Hafner et al. 2023 (DreamerV3) with explicit loops: stride-2 (transposed) convolutions, the RMS
norm over the channels of each pixel, SiLU, the block-linear projection of the decoder."""

from __future__ import annotations

import math

import pytest
import torch

from rl_objectives.modules import DreamerV3ImageDecoder, DreamerV3ImageEncoder

D64 = torch.float64


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny convolutions: threads only cost time on a loaded machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def silu(x: torch.Tensor) -> torch.Tensor:
    return x / (1 + torch.exp(-x))


def channel_rms_norm(x: torch.Tensor, norm) -> torch.Tensor:
    """``[C, H, W]``: each pixel's channel vector over the root of its mean square."""
    out = torch.empty_like(x)
    for i in range(x.shape[1]):
        for j in range(x.shape[2]):
            v = x[:, i, j]
            rms = math.sqrt(float((v * v).mean()) + norm.eps)
            out[:, i, j] = v / rms * norm.weight + norm.bias
    return out


def conv_stride2(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``[C_in, H, W]`` by ``[C_out, C_in, k, k]``, stride 2, zero padding k // 2."""
    k = weight.shape[-1]
    pad = k // 2
    c_out, (_, h, w) = weight.shape[0], x.shape
    out = torch.zeros(c_out, (h + 1) // 2, (w + 1) // 2, dtype=x.dtype)
    for o in range(c_out):
        for y in range(out.shape[1]):
            for z in range(out.shape[2]):
                total = 0.0
                for ky in range(k):
                    for kz in range(k):
                        iy, iz = 2 * y - pad + ky, 2 * z - pad + kz
                        if 0 <= iy < h and 0 <= iz < w:
                            total = total + (x[:, iy, iz] * weight[o, :, ky, kz]).sum()
                out[o, y, z] = total
    return out


def conv_transpose_stride2(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``[C_in, h, w]`` by ``[C_in, C_out, k, k]`` to ``[C_out, 2h, 2w]``: input pixel
    ``(y, z)`` adds ``x[:, y, z] @ weight[:, :, ky, kz]`` at ``(2y - k//2 + ky, 2z - k//2 + kz)``."""
    k = weight.shape[-1]
    pad = k // 2
    _, h, w = x.shape
    out = torch.zeros(weight.shape[1], 2 * h, 2 * w, dtype=x.dtype)
    for y in range(h):
        for z in range(w):
            for ky in range(k):
                for kz in range(k):
                    oy, oz = 2 * y - pad + ky, 2 * z - pad + kz
                    if 0 <= oy < 2 * h and 0 <= oz < 2 * w:
                        out[:, oy, oz] += x[:, y, z] @ weight[:, :, ky, kz]
    return out


def _randomise_norms(module: torch.nn.Module) -> None:
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name:
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))


def ref_encode(encoder: DreamerV3ImageEncoder, image: torch.Tensor) -> torch.Tensor:
    x = image.to(D64) / 255.0 - 0.5 if not image.is_floating_point() else image - 0.5
    stages = list(encoder.stages)
    for conv, norm in zip(stages[0::3], stages[1::3]):
        x = silu(channel_rms_norm(conv_stride2(x, conv.weight), norm.norm))
    return x.reshape(-1)


@pytest.mark.parametrize("dtype", ["uint8", "float"])
def test_encoder_matches_reference(dtype):
    torch.manual_seed(0)
    encoder = DreamerV3ImageEncoder(2, depth=2, mults=(1, 2), kernel_size=3).to(D64)
    _randomise_norms(encoder)
    g = torch.Generator().manual_seed(1)
    pixels = torch.randint(0, 256, (3, 2, 2, 5, 4), generator=g, dtype=torch.uint8)
    images = pixels if dtype == "uint8" else pixels.to(D64) / 255.0
    out = encoder(images)
    # 5x4 -> 3x2 -> 2x1, with 2 * 2 channels: 8 features
    assert out.shape == (3, 2, 8)
    assert encoder.output_features((2, 5, 4)) == 8
    assert encoder.output_shape((2, 5, 4)) == (4, 2, 1)
    with torch.no_grad():
        for idx in [(0, 0), (1, 1), (2, 0)]:
            torch.testing.assert_close(out[idx], ref_encode(encoder, images[idx]))
    # the 5x5 default kernel and a bigger stack keep halving the resolution (ceil)
    assert DreamerV3ImageEncoder(depth=4).output_shape((3, 64, 64)) == (16, 4, 4)
    assert DreamerV3ImageEncoder(depth=4, mults=(1,))(torch.rand(7, 3, 9, 9)).shape == (7, 100)


def ref_decode(decoder: DreamerV3ImageDecoder, latent: torch.Tensor) -> torch.Tensor:
    proj = decoder.projection
    blocks, block_in = proj.weight.shape[0], proj.weight.shape[1]
    flat = torch.cat(
        [latent[b * block_in : (b + 1) * block_in] @ proj.weight[b] for b in range(blocks)]
    )
    x = (flat + proj.bias).reshape(decoder.min_shape)
    x = silu(channel_rms_norm(x, decoder.projection_norm.norm))
    stages = list(decoder.stages)
    for i in range(0, len(stages) - 1, 3):
        conv, norm = stages[i], stages[i + 1]
        x = silu(channel_rms_norm(conv_transpose_stride2(x, conv.weight), norm.norm))
    last = stages[-1]
    return conv_transpose_stride2(x, last.weight) + last.bias[:, None, None] + 0.5


def test_decoder_matches_reference():
    torch.manual_seed(0)
    decoder = DreamerV3ImageDecoder(
        4, image_shape=(2, 8, 4), depth=2, mults=(1, 2), kernel_size=3, num_blocks=2
    ).to(D64)
    _randomise_norms(decoder)
    with torch.no_grad():
        decoder.stages[-1].bias.copy_(torch.tensor([0.3, -0.2], dtype=D64))
    # block-diagonal: the projection holds one [2, 2 * 2 * 1] matrix per block
    assert decoder.min_shape == (4, 2, 1)
    assert decoder.projection.weight.shape == (2, 2, 4)
    latent = torch.randn(3, 2, 4, dtype=D64)
    out = decoder(latent)
    assert out.shape == (3, 2, 2, 8, 4)
    with torch.no_grad():
        for idx in [(0, 0), (2, 1)]:
            torch.testing.assert_close(out[idx], ref_decode(decoder, latent[idx]))
    # group g of the smallest map's channels sees block g of the latent only
    x = torch.zeros(1, 4, dtype=D64, requires_grad=True)
    decoder.projection(x)[0, :4].sum().backward()  # channels 0-1 of the 2x1 map: group 0
    assert x.grad[0, 2:].abs().sum() == 0
    assert x.grad[0, :2].abs().sum() > 0


def test_decoder_mirrors_the_encoder_and_trains_to_reconstruct():
    torch.manual_seed(0)
    encoder = DreamerV3ImageEncoder(1, depth=4, mults=(1, 2))
    decoder = DreamerV3ImageDecoder(
        encoder.output_features((1, 8, 8)), image_shape=(1, 8, 8), depth=4, mults=(1, 2)
    )
    images = torch.rand(16, 1, 8, 8)
    opt = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=3e-3)
    losses = []
    for _ in range(30):
        loss = (decoder(encoder(images)) - images).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"in_channels": 0}, "in_channels as a positive int, got 0"),
        ({"depth": 2.5}, "depth as a positive int, got 2.5"),
        ({"kernel_size": 4}, "kernel_size odd"),
        ({"mults": ()}, r"mults as a non-empty sequence of positive ints .*, got \(\)"),
        ({"mults": (1, 0)}, r"got \(1, 0\)"),
        ({"norm_eps": -1.0}, "norm_eps as a number >= 0, got -1.0"),
    ],
)
def test_encoder_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DreamerV3ImageEncoder(**kwargs)


def test_image_networks_refuse_bad_shapes():
    encoder = DreamerV3ImageEncoder(3, depth=2, mults=(1,))
    with pytest.raises(
        ValueError, match=r"expected images \[\.\.\., 3, H, W\] .*got shape \(2, 1, 8, 8\)"
    ):
        encoder(torch.rand(2, 1, 8, 8))
    with pytest.raises(ValueError, match=r"multiples of 2\*\*len\(mults\) = 4, got \(3, 10, 8\)"):
        DreamerV3ImageDecoder(8, image_shape=(3, 10, 8), depth=2, mults=(1, 1), num_blocks=1)
    with pytest.raises(ValueError, match=r"num_blocks to divide in_features .* in_features=6"):
        DreamerV3ImageDecoder(6, image_shape=(3, 8, 8), depth=2, mults=(1, 2), num_blocks=4)
    decoder = DreamerV3ImageDecoder(6, image_shape=(3, 8, 8), depth=2, mults=(1, 2), num_blocks=1)
    with pytest.raises(ValueError, match=r"latent \[\.\.\., 6\] .*got shape \(2, 5\)"):
        decoder(torch.randn(2, 5))
