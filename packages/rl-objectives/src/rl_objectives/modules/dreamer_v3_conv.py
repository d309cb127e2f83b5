"""DreamerV3's image networks: :class:`DreamerV3ImageEncoder` and :class:`DreamerV3ImageDecoder`.

Hafner et al., "Mastering Diverse Domains through World Models" (DreamerV3,
https://arxiv.org/abs/2301.04104), appendix "World model": the encoder is a stack of
stride-2 convolutions whose channel count grows from stage to stage (``depth * mults[i]``),
each followed by a normalisation over the channels and SiLU; the decoder mirrors it with
transposed convolutions from a linear projection of the latent to the smallest feature map.

As in the reference implementation (and TorchRL 0.14), the normalisation is an RMS norm over
the channels of each pixel with a learned scale and shift
(``x / sqrt(mean_c(x**2) + eps) * scale + shift``), the convolutions before it have no bias,
and weights start from DreamerV3's truncated normal (see ``dreamer_v3_nets``). Images are
``[*B, C, H, W]``; the encoder maps ``uint8`` pixels in ``[0, 255]`` and float pixels in
``[0, 1]`` to ``[-0.5, 0.5]``, and the decoder predicts in that scale shifted back by 0.5 (so
its output is compared with pixels divided by 255).
"""

from __future__ import annotations

import itertools

import torch
from torch import nn
from torch.nn import functional as F

from rl_objectives.modules.dreamer_v3_nets import _BlockLinear, _RMSNorm, _truncated_normal_

__all__ = ["DreamerV3ImageEncoder", "DreamerV3ImageDecoder"]


def _check_stack(
    where: str, depth: object, mults: object, kernel_size: object, norm_eps: object
) -> tuple[int, ...]:
    for name, value in (("depth", depth), ("kernel_size", kernel_size)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{where}: expected {name} as a positive int, got {value!r}.")
    if kernel_size % 2 == 0:  # type: ignore[operator]
        raise ValueError(
            f"{where}: expected kernel_size odd (the padding keeps every stage at exactly half "
            f"or twice the resolution), got {kernel_size}."
        )
    if (
        not isinstance(mults, (tuple, list))
        or not mults
        or not all(isinstance(m, int) and not isinstance(m, bool) and m >= 1 for m in mults)
    ):
        raise ValueError(
            f"{where}: expected mults as a non-empty sequence of positive ints (one channel "
            f"multiplier per stage), got {mults!r}."
        )
    if not isinstance(norm_eps, (int, float)) or isinstance(norm_eps, bool) or not norm_eps >= 0:
        raise ValueError(f"{where}: expected norm_eps as a number >= 0, got {norm_eps!r}.")
    return tuple(mults)


class _ChannelNorm(nn.Module):
    """The RMS norm over the channel dim (``-3``) of ``[N, C, H, W]`` feature maps."""

    def __init__(self, channels: int, eps: float, device: torch.device | str | None) -> None:
        super().__init__()
        self.norm = _RMSNorm(channels, eps, device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x.movedim(-3, -1)).movedim(-1, -3)


class DreamerV3ImageEncoder(nn.Module):
    """DreamerV3's convolutional image encoder.

    ``len(mults)`` stages; stage ``i`` is a stride-2 convolution (``kernel_size``, padding
    ``kernel_size // 2``, no bias) to ``depth * mults[i]`` channels, the RMS norm over the
    channels and SiLU, so each stage maps ``H`` to ``ceil(H / 2)``. The input is shifted to
    ``[-0.5, 0.5]`` first (``uint8`` divided by 255); the output is the last feature map,
    flattened.

    Args:
        in_channels: channels of the images. Defaults to 3.
        depth: base channel count. Defaults to 64.
        mults: channel multiplier of each stage. Defaults to ``(2, 3, 4, 4)``.
        kernel_size: odd kernel size of the convolutions. Defaults to 5.
        norm_eps: the RMS norm's epsilon. Defaults to 1e-4.
        device: device of the parameters.

    Raises:
        ValueError: a size that is not a positive int, an even ``kernel_size``, ``mults``
            empty or holding a non-positive int, a negative ``norm_eps``; (when called) an
            image that is not ``[*B, in_channels, H, W]``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import DreamerV3ImageEncoder
        >>> encoder = DreamerV3ImageEncoder(depth=8, mults=(1, 2))
        >>> images = torch.randint(0, 256, (4, 2, 3, 16, 16), dtype=torch.uint8)
        >>> encoder(images).shape, encoder.output_features((3, 16, 16))
        (torch.Size([4, 2, 256]), 256)
    """

    def __init__(
        self,
        in_channels: int = 3,
        depth: int = 64,
        mults: tuple[int, ...] = (2, 3, 4, 4),
        kernel_size: int = 5,
        norm_eps: float = 1e-4,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        where = "DreamerV3ImageEncoder"
        if not isinstance(in_channels, int) or isinstance(in_channels, bool) or in_channels < 1:
            raise ValueError(
                f"{where}: expected in_channels as a positive int, got {in_channels!r}."
            )
        self.mults = _check_stack(where, depth, mults, kernel_size, norm_eps)
        self.in_channels, self.depth, self.kernel_size = in_channels, depth, kernel_size
        layers: list[nn.Module] = []
        channels = in_channels
        for mult in self.mults:
            conv = nn.Conv2d(
                channels,
                depth * mult,
                kernel_size,
                stride=2,
                padding=kernel_size // 2,
                bias=False,
                device=device,
            )
            _truncated_normal_(conv.weight, channels * kernel_size**2)
            layers += [conv, _ChannelNorm(depth * mult, norm_eps, device), nn.SiLU()]
            channels = depth * mult
        self.stages = nn.Sequential(*layers)

    def output_shape(self, image_shape: tuple[int, int, int]) -> tuple[int, int, int]:
        """The ``(channels, height, width)`` of the last feature map for images of
        ``image_shape`` ``(C, H, W)``."""
        _, height, width = image_shape
        for _ in self.mults:
            height, width = -(-height // 2), -(-width // 2)
        return self.depth * self.mults[-1], height, width

    def output_features(self, image_shape: tuple[int, int, int]) -> int:
        """The size of the encoding of images of ``image_shape`` ``(C, H, W)``."""
        channels, height, width = self.output_shape(image_shape)
        return channels * height * width

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        """``[*B, C, H, W]`` images -> ``[*B, output_features((C, H, W))]``."""
        if image.ndim < 3 or image.shape[-3] != self.in_channels:
            raise ValueError(
                f"DreamerV3ImageEncoder: expected images [..., {self.in_channels}, H, W] "
                f"(in_channels={self.in_channels}), got shape {tuple(image.shape)}."
            )
        if image.is_floating_point():
            x = image - 0.5
        else:
            x = image.to(self.stages[0].weight.dtype) / 255.0 - 0.5
        batch = x.shape[:-3]
        out = self.stages(x.reshape(-1, *x.shape[-3:]))
        return out.reshape(*batch, -1)


class DreamerV3ImageDecoder(nn.Module):
    """DreamerV3's transposed-convolution image decoder.

    With ``L = len(mults)`` and ``(h, w) = (H, W) / 2**L``: a block-linear projection maps the
    latent (``num_blocks`` equal blocks) to the ``[depth * mults[-1], h, w]`` feature map, its
    channels cut into ``num_blocks`` groups, group ``g`` a linear function of block ``g`` of
    the latent (``num_blocks=1``: a dense projection); the RMS norm over the channels and SiLU
    follow. Then ``L`` stride-2 transposed convolutions (``kernel_size``, padding
    ``kernel_size // 2``, output padding 1) each double the resolution: to
    ``depth * mults[i - 1]`` channels for ``i = L - 1, ..., 1``, each followed by the norm and
    SiLU, and the last one to the image channels, with a bias and no norm. The output is that
    last map plus 0.5, unbounded, in the scale of pixels divided by 255.

    Args:
        in_features: size of the latent (for instance the stochastic state and the belief,
            concatenated); a multiple of ``num_blocks``.
        image_shape: the decoded ``(C, H, W)``; ``H`` and ``W`` multiples of ``2**len(mults)``.
            Defaults to ``(3, 64, 64)``.
        depth: base channel count, as the encoder's. Defaults to 64.
        mults: the encoder's channel multipliers, mirrored. Defaults to ``(2, 3, 4, 4)``.
        kernel_size: odd kernel size of the transposed convolutions. Defaults to 5.
        num_blocks: blocks of the input projection; divides ``in_features`` and
            ``depth * mults[-1]``. Defaults to 8.
        norm_eps: the RMS norm's epsilon. Defaults to 1e-4.
        device: device of the parameters.

    Raises:
        ValueError: as :class:`DreamerV3ImageEncoder`; an ``image_shape`` that is not three
            positive ints with ``H`` and ``W`` multiples of ``2**len(mults)``; ``num_blocks``
            not dividing ``in_features`` and ``depth * mults[-1]``; (when called) a latent
            not ``[*B, in_features]``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import DreamerV3ImageDecoder
        >>> decoder = DreamerV3ImageDecoder(12, image_shape=(3, 16, 16), depth=8, mults=(1, 2),
        ...                                 num_blocks=2)
        >>> decoder(torch.randn(4, 5, 12)).shape
        torch.Size([4, 5, 3, 16, 16])
    """

    def __init__(
        self,
        in_features: int,
        image_shape: tuple[int, int, int] = (3, 64, 64),
        depth: int = 64,
        mults: tuple[int, ...] = (2, 3, 4, 4),
        kernel_size: int = 5,
        num_blocks: int = 8,
        norm_eps: float = 1e-4,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        where = "DreamerV3ImageDecoder"
        for name, value in (("in_features", in_features), ("num_blocks", num_blocks)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{where}: expected {name} as a positive int, got {value!r}.")
        mults = _check_stack(where, depth, mults, kernel_size, norm_eps)
        scale = 2 ** len(mults)
        if (
            not isinstance(image_shape, (tuple, list))
            or len(image_shape) != 3
            or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in image_shape
            )
            or image_shape[1] % scale
            or image_shape[2] % scale
        ):
            raise ValueError(
                f"{where}: expected image_shape as (C, H, W) positive ints with H and W multiples "
                f"of 2**len(mults) = {scale}, got {image_shape!r}."
            )
        first = depth * mults[-1]
        if in_features % num_blocks or first % num_blocks:
            raise ValueError(
                f"{where}: expected num_blocks to divide in_features and depth * mults[-1], got "
                f"num_blocks={num_blocks}, in_features={in_features} and depth * mults[-1]="
                f"{first}. Pass num_blocks=1 for a dense projection."
            )
        self.in_features, self.image_shape = in_features, tuple(image_shape)
        channels, height, width = image_shape
        self.min_shape = (first, height // scale, width // scale)
        self.projection = _BlockLinear(
            in_features, first * self.min_shape[1] * self.min_shape[2], num_blocks, device
        )
        self.projection_norm = _ChannelNorm(first, norm_eps, device)
        widths = [depth * m for m in reversed(mults)] + [channels]
        layers: list[nn.Module] = []
        for i, (c_in, c_out) in enumerate(itertools.pairwise(widths)):
            last = i == len(mults) - 1
            conv = nn.ConvTranspose2d(
                c_in,
                c_out,
                kernel_size,
                stride=2,
                padding=kernel_size // 2,
                output_padding=1,
                bias=last,
                device=device,
            )
            _truncated_normal_(conv.weight, c_in * kernel_size**2)
            if last:
                nn.init.zeros_(conv.bias)
                layers.append(conv)
            else:
                layers += [conv, _ChannelNorm(c_out, norm_eps, device), nn.SiLU()]
        self.stages = nn.Sequential(*layers)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        """``[*B, in_features]`` -> images ``[*B, C, H, W]``."""
        if latent.ndim < 1 or latent.shape[-1] != self.in_features:
            raise ValueError(
                f"DreamerV3ImageDecoder: expected a latent [..., {self.in_features}] "
                f"(in_features={self.in_features}), got shape {tuple(latent.shape)}."
            )
        batch = latent.shape[:-1]
        x = self.projection(latent.reshape(-1, self.in_features)).unflatten(-1, self.min_shape)
        x = F.silu(self.projection_norm(x))
        return (self.stages(x) + 0.5).reshape(*batch, *self.image_shape)
