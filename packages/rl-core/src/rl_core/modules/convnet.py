"""A 2-D convolutional network over images with any number of leading batch dimensions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from rl_core.modules.mlp import _hidden_widths, _norm_layer

_IntOrPair = int | tuple[int, int]


def _per_layer(value: _IntOrPair | Sequence[_IntOrPair], depth: int, name: str) -> list[Any]:
    """Broadcasts a per-layer option (an int, a pair, or one of those per layer) to ``depth``."""
    if isinstance(value, int) or (
        isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value)
    ):
        return [value] * depth
    values = list(value)
    if len(values) != depth:
        raise ValueError(
            f"ConvNet: expected one {name} per layer ({depth}), got {len(values)}. "
            f"Pass a single value or a sequence of length {depth}."
        )
    return values


class ConvNet(nn.Module):
    """A stack of ``Conv2d`` layers with activations, followed by an aggregator.

    The input is ``[*B, C, H, W]`` with any number of leading dims ``B`` (none included); they
    are flattened for the convolutions and restored afterwards. The default aggregator
    flattens the last three dimensions, so the output is ``[*B, features]``.

    Args:
        in_features: number of input channels, or ``None`` for a lazy first layer.
        depth: number of convolution layers. Defaults to ``len(num_cells)`` for a sequence,
            else 3.

    Keyword Args:
        num_cells: output channels of every layer (an int) or one per layer. Defaults to 32.
        kernel_sizes: kernel size (int or pair), or one per layer. Defaults to 3.
        strides: stride (int or pair), or one per layer. Defaults to 1.
        paddings: padding (int or pair), or one per layer. Defaults to 0.
        activation_class: activation module class. Defaults to ``nn.ELU``.
        activation_kwargs: keyword arguments for ``activation_class``.
        norm_class: normalisation class, built as ``norm_class(channels, **norm_kwargs)`` after
            each convolution (``nn.BatchNorm2d``...). Defaults to none.
        norm_kwargs: keyword arguments for ``norm_class``.
        bias_last_layer: whether the last convolution has a bias. Defaults to ``True``.
        activate_last_layer: whether the last convolution is followed by an activation (and
            norm). Defaults to ``True``.
        aggregator_class: module class applied to the ``[*B, C', H', W']`` feature maps;
            ``None`` keeps them. Defaults to ``nn.Flatten`` over the last three dims.
        aggregator_kwargs: keyword arguments for ``aggregator_class``. Defaults to
            ``{"start_dim": -3}`` for the default aggregator.
        squeeze_output: whether to drop singleton feature dimensions from the output.
            Defaults to ``False``.
        device: device of the parameters.

    Raises:
        ValueError: a per-layer option has the wrong length, or the input has fewer than
            three dimensions.

    Examples:
        >>> import torch
        >>> from rl_core.modules import ConvNet
        >>> net = ConvNet(3, num_cells=[8, 16], kernel_sizes=3, strides=2)
        >>> net(torch.zeros(4, 2, 3, 21, 21)).shape
        torch.Size([4, 2, 256])
        >>> ConvNet(num_cells=4, depth=1, aggregator_class=None)(torch.zeros(3, 8, 8)).shape
        torch.Size([4, 6, 6])
    """

    def __init__(
        self,
        in_features: int | None = None,
        depth: int | None = None,
        *,
        num_cells: int | Sequence[int] | None = None,
        kernel_sizes: _IntOrPair | Sequence[_IntOrPair] = 3,
        strides: _IntOrPair | Sequence[_IntOrPair] = 1,
        paddings: _IntOrPair | Sequence[_IntOrPair] = 0,
        activation_class: type[nn.Module] = nn.ELU,
        activation_kwargs: dict[str, Any] | None = None,
        norm_class: type[nn.Module] | None = None,
        norm_kwargs: dict[str, Any] | None = None,
        bias_last_layer: bool = True,
        activate_last_layer: bool = True,
        aggregator_class: type[nn.Module] | None = nn.Flatten,
        aggregator_kwargs: dict[str, Any] | None = None,
        squeeze_output: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        channels = _hidden_widths(depth, num_cells, "ConvNet")
        if not channels:
            raise ValueError("ConvNet: expected at least one layer, got depth=0.")
        n = len(channels)
        kernels = _per_layer(kernel_sizes, n, "kernel size")
        strides_ = _per_layer(strides, n, "stride")
        pads = _per_layer(paddings, n, "padding")
        activation_kwargs = activation_kwargs or {}
        norm_kwargs = norm_kwargs or {}

        layers: list[nn.Module] = []
        n_in = in_features
        for i, n_out in enumerate(channels):
            last = i == n - 1
            conv_kwargs = {
                "kernel_size": kernels[i],
                "stride": strides_[i],
                "padding": pads[i],
                "bias": bias_last_layer if last else True,
                "device": device,
            }
            if n_in is None:
                layers.append(nn.LazyConv2d(n_out, **conv_kwargs))
            else:
                layers.append(nn.Conv2d(n_in, n_out, **conv_kwargs))
            if not last or activate_last_layer:
                if norm_class is not None:
                    layers.append(_norm_layer(norm_class, n_out, norm_kwargs).to(device))
                layers.append(activation_class(**activation_kwargs))
            n_in = n_out
        self.layers = nn.Sequential(*layers)
        self.in_features = in_features
        self.num_cells = channels
        if aggregator_class is None:
            self.aggregator: nn.Module | None = None
        else:
            if aggregator_kwargs is None and aggregator_class is nn.Flatten:
                aggregator_kwargs = {"start_dim": -3}
            self.aggregator = aggregator_class(**(aggregator_kwargs or {}))
        self.squeeze_output = squeeze_output

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Runs the convolutions and the aggregator.

        Args:
            x: images of shape ``[*B, C, H, W]``.

        Returns:
            ``aggregator(features)`` where features are ``[*B, C', H', W']``.
        """
        if x.ndim < 3:
            raise ValueError(
                f"ConvNet.forward: expected an input of shape [*B, C, H, W], got "
                f"{tuple(x.shape)}. Add the channel dimension."
            )
        batch = x.shape[:-3]
        y = self.layers(x.reshape(-1, *x.shape[-3:]))
        y = y.reshape(*batch, *y.shape[-3:])
        if self.aggregator is not None:
            y = self.aggregator(y)
        if self.squeeze_output:
            features = [size for size in y.shape[len(batch) :] if size != 1]
            y = y.reshape(*batch, *features)
        return y


__all__ = ["ConvNet"]
