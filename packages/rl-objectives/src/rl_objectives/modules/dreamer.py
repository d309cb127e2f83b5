"""Dreamer's observation encoder and decoder (pixels or vectors) and its actor network.

Pixel networks follow "World Models" (Ha and Schmidhuber, https://arxiv.org/abs/1803.10122) as
Dreamer uses them: four stride-2 convolutions of kernel 4 (``3x64x64 -> 1024`` features with
32 channels) and a mirror of transposed convolutions (kernels 5, 5, 6, 6) from a ``1x1`` map.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from rl_core.modules import MLP

__all__ = ["ObsEncoder", "ObsDecoder", "DreamerActor"]


def _channels(where: str, channels: int, depth: int | None, num_layers: int) -> int:
    if depth is not None:
        warnings.warn(
            f"{where}: depth is an old name of channels; pass channels={depth} instead.",
            DeprecationWarning,
            stacklevel=3,
        )
        channels = depth
    for name, value in (("channels", channels), ("num_layers", num_layers)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{where}: expected {name} as a positive int, got {value!r}.")
    return channels


class ObsEncoder(nn.Module):
    """Encodes an observation into a flat feature vector.

    Pixels (``[*B, C, H, W]``): ``num_layers`` convolutions of kernel 4 and stride 2 with ReLUs,
    ``channels * 2**i`` output channels at layer ``i``, flattened to ``[*B, features]`` (1024
    for ``3x64x64`` inputs and the defaults). Vectors (built with ``in_features``): an MLP of
    ``num_layers`` layers of width ``channels * 8`` with ELUs, ``[*B, in_features] -> [*B,
    channels * 8]``.

    Args:
        channels: channels of the first convolution (width / 8 of the vector MLP). Defaults
            to 32.
        num_layers: number of layers. Defaults to 4.
        in_channels: input channels of pixel observations; ``None`` makes the first
            convolution lazy.
        depth: the old name of ``channels`` (deprecated).
        device: device of the parameters.

    Keyword Args:
        in_features: size of vector observations: builds the MLP encoder instead.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import ObsEncoder
        >>> ObsEncoder(in_channels=3)(torch.zeros(2, 5, 3, 64, 64)).shape
        torch.Size([2, 5, 1024])
        >>> ObsEncoder(channels=4, num_layers=2, in_features=3)(torch.zeros(7, 3)).shape
        torch.Size([7, 32])
    """

    def __init__(
        self,
        channels: int = 32,
        num_layers: int = 4,
        in_channels: int | None = None,
        depth: int | None = None,
        device: torch.device | str | None = None,
        *,
        in_features: int | None = None,
    ) -> None:
        super().__init__()
        channels = _channels("ObsEncoder", channels, depth, num_layers)
        self.in_features = in_features
        if in_features is not None:
            width = channels * 8
            self.encoder = MLP(
                in_features,
                width,
                depth=num_layers - 1,
                num_cells=width,
                activation_class=nn.ELU,
                activate_last_layer=True,
                device=device,
            )
            return
        layers: list[nn.Module] = []
        in_ch = in_channels
        for i in range(num_layers):
            out_ch = channels * 2**i
            conv = (
                nn.LazyConv2d(out_ch, 4, stride=2, device=device)
                if in_ch is None
                else nn.Conv2d(in_ch, out_ch, 4, stride=2, device=device)
            )
            layers += [conv, nn.ReLU()]
            in_ch = out_ch
        self.encoder = nn.Sequential(*layers)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        """``[*B, C, H, W]`` (or ``[*B, in_features]``) to ``[*B, features]``."""
        if self.in_features is not None:
            return self.encoder(observation)
        if observation.ndim < 3:
            raise ValueError(
                f"ObsEncoder: expected pixels shaped [*B, C, H, W], got shape "
                f"{tuple(observation.shape)}. Build ObsEncoder(in_features=...) for vectors."
            )
        batch = observation.shape[:-3]
        out = self.encoder(observation.reshape(-1, *observation.shape[-3:]))
        return out.reshape(*batch, -1)


class ObsDecoder(nn.Module):
    """Decodes the latent ``[state, belief]`` into an observation.

    Pixels: ``Linear -> ReLU`` to ``channels * 32`` features seen as a ``1x1`` map, then
    ``num_layers`` stride-2 transposed convolutions (ReLUs in between) with
    ``channels * 2**(num_layers - 2 - i)`` channels, the last one ``out_channels``:
    ``[*B, out_channels, 64, 64]`` with the defaults. Vectors (built with ``out_features``):
    an MLP of ``num_layers`` layers of width ``channels * 8`` with ELUs.

    Args:
        channels: channels of the last hidden layer. Defaults to 32.
        num_layers: number of layers. Defaults to 4.
        kernel_sizes: kernel size of each transposed convolution (an int or one per layer).
            Defaults to ``[5, 5, 6, 6]`` with 4 layers, else 5 for each.
        latent_dim: ``state_dim + rnn_hidden_dim``; ``None`` makes the first layer lazy.
        out_channels: channels of the output image. Defaults to 3.
        depth: the old name of ``channels`` (deprecated).
        device: device of the parameters.

    Keyword Args:
        out_features: size of vector observations: builds the MLP decoder instead.

    Raises:
        ValueError: ``kernel_sizes`` has not ``num_layers`` entries.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import ObsDecoder
        >>> ObsDecoder(latent_dim=10)(torch.zeros(2, 4), torch.zeros(2, 6)).shape
        torch.Size([2, 3, 64, 64])
        >>> ObsDecoder(channels=4, latent_dim=10, out_features=3)(torch.zeros(4, 4), torch.zeros(4, 6)).shape
        torch.Size([4, 3])
    """

    def __init__(
        self,
        channels: int = 32,
        num_layers: int = 4,
        kernel_sizes: int | Sequence[int] | None = None,
        latent_dim: int | None = None,
        out_channels: int = 3,
        depth: int | None = None,
        device: torch.device | str | None = None,
        *,
        out_features: int | None = None,
    ) -> None:
        super().__init__()
        channels = _channels("ObsDecoder", channels, depth, num_layers)
        self.out_features = out_features
        if out_features is not None:
            width = channels * 8
            self.decoder = MLP(
                latent_dim,
                out_features,
                depth=num_layers - 1,
                num_cells=width,
                activation_class=nn.ELU,
                device=device,
            )
            return
        if kernel_sizes is None:
            kernel_sizes = [5, 5, 6, 6] if num_layers == 4 else [5] * num_layers
        elif isinstance(kernel_sizes, int):
            kernel_sizes = [kernel_sizes] * num_layers
        kernel_sizes = list(kernel_sizes)
        if len(kernel_sizes) != num_layers:
            raise ValueError(
                f"ObsDecoder: expected {num_layers} kernel_sizes (one per layer), got "
                f"{kernel_sizes}."
            )
        self.latent_channels = channels * 32
        self.state_to_latent = nn.Sequential(
            nn.LazyLinear(self.latent_channels, device=device)
            if latent_dim is None
            else nn.Linear(latent_dim, self.latent_channels, device=device),
            nn.ReLU(),
        )
        sizes = [self.latent_channels]
        sizes += [channels * 2 ** (num_layers - 2 - i) for i in range(num_layers - 1)]
        sizes += [out_channels]
        layers: list[nn.Module] = []
        for i, kernel in enumerate(kernel_sizes):
            layers.append(nn.ConvTranspose2d(sizes[i], sizes[i + 1], kernel, 2, device=device))
            if i + 1 < num_layers:
                layers.append(nn.ReLU())
        self.decoder = nn.Sequential(*layers)

    def forward(self, state: torch.Tensor, rnn_hidden: torch.Tensor) -> torch.Tensor:
        """``[*B, state_dim]`` and ``[*B, rnn_hidden_dim]`` to the decoded observation."""
        latent = torch.cat([state, rnn_hidden], dim=-1)
        if self.out_features is not None:
            return self.decoder(latent)
        batch = latent.shape[:-1]
        maps = self.state_to_latent(latent).reshape(-1, self.latent_channels, 1, 1)
        out = self.decoder(maps)
        return out.reshape(*batch, *out.shape[-3:])


class DreamerActor(nn.Module):
    """Dreamer's actor network: the location and scale of the action distribution.

    An MLP of ``[state, belief]`` gives ``2 * out_features`` values split into ``loc`` and a
    raw scale mapped by a biased softplus, ``scale = softplus(x + b) + std_min_val`` with ``b``
    such that ``scale = std_bias`` at ``x = 0`` (TorchRL's
    ``"biased_softplus_{std_bias}_{std_min_val}"``). Wrap it in a ``ProbabilisticActor`` with
    ``TanhNormal`` for bounded actions.

    Args:
        out_features: size of the action.
        depth: number of hidden layers. Defaults to 4.
        num_cells: width of the hidden layers. Defaults to 200.
        activation_class: activation class. Defaults to ``nn.ELU``.
        std_bias: the scale at a zero raw output. Defaults to 5.0.
        std_min_val: the smallest scale. Defaults to 1e-4.
        device: device of the parameters.

    Keyword Args:
        in_features: ``state_dim + rnn_hidden_dim``; ``None`` makes the first layer lazy.

    Raises:
        ValueError: ``std_bias <= std_min_val``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import DreamerActor
        >>> actor = DreamerActor(2, depth=1, num_cells=8, in_features=10)
        >>> loc, scale = actor(torch.zeros(3, 4), torch.zeros(3, 6))
        >>> loc.shape, bool((scale > 0).all())
        (torch.Size([3, 2]), True)
    """

    def __init__(
        self,
        out_features: int,
        depth: int = 4,
        num_cells: int = 200,
        activation_class: type[nn.Module] = nn.ELU,
        std_bias: float = 5.0,
        std_min_val: float = 1e-4,
        device: torch.device | str | None = None,
        *,
        in_features: int | None = None,
    ) -> None:
        super().__init__()
        if not std_bias > std_min_val:
            raise ValueError(
                f"DreamerActor: expected std_bias > std_min_val, got std_bias={std_bias} and "
                f"std_min_val={std_min_val}."
            )
        self.backbone = MLP(
            in_features,
            2 * out_features,
            depth=depth,
            num_cells=num_cells,
            activation_class=activation_class,
            device=device,
        )
        self.std_min_val = std_min_val
        # softplus(bias) + std_min_val == std_bias
        self.std_shift = math.log(math.expm1(std_bias - std_min_val))

    def forward(
        self, state: torch.Tensor, belief: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns ``(loc, scale)``, each ``[*B, out_features]``."""
        loc, raw = self.backbone(torch.cat([state, belief], dim=-1)).chunk(2, -1)
        return loc, F.softplus(raw + self.std_shift) + self.std_min_val
