"""Conv3dNet: a stack of 3-d convolutions (video clips, voxel grids) and an aggregator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from rl_objectives.modules.net_layers import SquashDims

_Size = int | Sequence[int]


def _per_layer(value: _Size | Sequence[_Size], depth: int, name: str) -> list[_Size]:
    """One entry per layer: an int repeated, a per-layer sequence, or one triple repeated."""
    if isinstance(value, int):
        return [value] * depth
    values = list(value)
    if len(values) == depth:
        return values
    if len(values) == 3 and all(isinstance(v, int) for v in values):
        return [tuple(values)] * depth
    raise ValueError(
        f"Conv3dNet: {name} has {len(values)} entries for {depth} layers; give one per layer "
        f"or a single value."
    )


class Conv3dNet(nn.Module):
    """``Conv3d`` layers, each followed by an activation (and norm), then an aggregator
    (TorchRL's ``Conv3dNet``).

    The input is ``[*B, C, D, H, W]`` with any number of leading dims; they are flattened for
    the convolutions and restored afterwards. The default aggregator (:class:`SquashDims` over
    four dims) gives ``[*B, C' * D' * H' * W']``.

    Args:
        in_features: input channels, or ``None`` for a lazy first layer.
        depth: number of layers. Defaults to ``len(num_cells)`` for a sequence, else 3.
        num_cells: output channels of every layer (an int) or one per layer. Defaults to 32.
        kernel_sizes: kernel size (an int or a triple), or one per layer. Defaults to 3.
        strides: stride, or one per layer. Defaults to 1.
        paddings: padding, or one per layer. Defaults to 0.
        activation_class: the activation. Defaults to ``nn.ELU``.
        activation_kwargs: its keyword arguments.
        norm_class: built as ``norm_class(channels, **norm_kwargs)`` after each convolution
            (``nn.BatchNorm3d``...). Defaults to none.
        norm_kwargs: its keyword arguments.
        bias_last_layer: whether the last convolution has a bias. Defaults to True.
        aggregator_class: applied to ``[*B, C', D', H', W']``; ``None`` keeps them. Defaults to
            :class:`SquashDims`.
        aggregator_kwargs: its keyword arguments. Defaults to ``{"ndims_in": 4}`` for
            :class:`SquashDims`.
        squeeze_output: drop singleton feature dims of the output. Defaults to False.
        device: device of the parameters.

    Raises:
        ValueError: ``depth`` is 0 or disagrees with a per-layer option; the input has fewer
            than four dims.

    Examples:
        >>> import torch
        >>> net = Conv3dNet(3, num_cells=[4, 8], kernel_sizes=3, strides=2)
        >>> net(torch.zeros(2, 3, 17, 17, 17)).shape
        torch.Size([2, 216])
    """

    def __init__(
        self,
        in_features: int | None = None,
        depth: int | None = None,
        num_cells: int | Sequence[int] | None = None,
        kernel_sizes: _Size | Sequence[_Size] = 3,
        strides: _Size | Sequence[_Size] = 1,
        paddings: _Size | Sequence[_Size] = 0,
        activation_class: type[nn.Module] = nn.ELU,
        activation_kwargs: dict[str, Any] | None = None,
        norm_class: type[nn.Module] | None = None,
        norm_kwargs: dict[str, Any] | None = None,
        bias_last_layer: bool = True,
        aggregator_class: type[nn.Module] | None = SquashDims,
        aggregator_kwargs: dict[str, Any] | None = None,
        squeeze_output: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if num_cells is None:
            num_cells = 32
        if isinstance(num_cells, int):
            channels = [num_cells] * (3 if depth is None else depth)
        else:
            channels = list(num_cells)
            if depth is not None and depth != len(channels):
                raise ValueError(
                    f"Conv3dNet: depth={depth} but num_cells has {len(channels)} entries."
                )
        if not channels:
            raise ValueError("Conv3dNet: expected at least one layer, got depth 0.")
        n = len(channels)
        kernels = _per_layer(kernel_sizes, n, "kernel_sizes")
        steps = _per_layer(strides, n, "strides")
        pads = _per_layer(paddings, n, "paddings")
        layers: list[nn.Module] = []
        n_in = in_features
        for i, n_out in enumerate(channels):
            kwargs = {
                "kernel_size": kernels[i],
                "stride": steps[i],
                "padding": pads[i],
                "bias": i < n - 1 or bias_last_layer,
                "device": device,
            }
            conv = (
                nn.LazyConv3d(n_out, **kwargs) if n_in is None else nn.Conv3d(n_in, n_out, **kwargs)
            )
            layers.append(conv)
            if norm_class is not None:
                layers.append(norm_class(n_out, **(norm_kwargs or {})).to(device))
            layers.append(activation_class(**(activation_kwargs or {})))
            n_in = n_out
        self.layers = nn.Sequential(*layers)
        self.in_features = in_features
        self.num_cells = channels
        self.out_features = channels[-1]
        if aggregator_class is None:
            self.aggregator: nn.Module | None = None
        else:
            if aggregator_kwargs is None and aggregator_class is SquashDims:
                aggregator_kwargs = {"ndims_in": 4}
            self.aggregator = aggregator_class(**(aggregator_kwargs or {}))
        self.squeeze_output = bool(squeeze_output)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[*B, C, D, H, W]`` -> ``aggregator([*B, C', D', H', W'])``."""
        if x.ndim < 4:
            raise ValueError(
                f"Conv3dNet.forward: expected an input of shape [*B, C, D, H, W], got "
                f"{tuple(x.shape)}."
            )
        batch = x.shape[:-4]
        y = self.layers(x.reshape(-1, *x.shape[-4:]))
        y = y.reshape(*batch, *y.shape[-4:])
        if self.aggregator is not None:
            y = self.aggregator(y)
        if self.squeeze_output:
            y = y.reshape(*batch, *[size for size in y.shape[len(batch) :] if size != 1])
        return y


__all__ = ["Conv3dNet"]
