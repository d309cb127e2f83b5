"""A multi-layer perceptron with a lazy input size and a shaped output."""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn


def _hidden_widths(
    depth: int | None, num_cells: int | Sequence[int] | None, where: str
) -> list[int]:
    """Resolves ``depth`` and ``num_cells`` into the list of hidden-layer widths."""
    if num_cells is None:
        num_cells = 32
        if depth is None:
            depth = 3
    if isinstance(num_cells, int):
        if depth is None:
            depth = 3
        if depth < 0:
            raise ValueError(f"{where}: expected depth >= 0, got {depth}.")
        return [num_cells] * depth
    widths = [int(n) for n in num_cells]
    if depth is not None and depth != len(widths):
        raise ValueError(
            f"{where}: depth={depth} does not match num_cells of length {len(widths)}. "
            f"Pass depth=None (it is then len(num_cells)) or one width per layer."
        )
    return widths


def _norm_layer(norm_class: type[nn.Module], width: int, kwargs: dict[str, Any]) -> nn.Module:
    """``norm_class(width, **kwargs)``, or ``norm_class(**kwargs)`` when ``kwargs`` already name
    its first argument (TorchRL's form: ``norm_kwargs={"num_features": 64}``)."""
    first = next(iter(inspect.signature(norm_class).parameters), None)
    return norm_class(**kwargs) if first in kwargs else norm_class(width, **kwargs)


def _out_shape(out_features: int | Sequence[int] | None, where: str) -> tuple[int, ...]:
    if out_features is None:
        raise ValueError(f"{where}: out_features is required, got None. Pass an int or a shape.")
    if isinstance(out_features, int):
        return (out_features,)
    shape = tuple(int(n) for n in out_features)
    if not shape:
        raise ValueError(f"{where}: out_features must not be an empty shape.")
    return shape


class MLP(nn.Sequential):
    """A stack of fully connected layers with activations in between.

    Hidden layers are ``layer -> norm -> activation -> dropout``; the last layer has no
    activation unless ``activate_last_layer=True``. With ``in_features=None`` the first layer is
    an ``nn.LazyLinear`` that learns its input size on the first call.

    Args:
        in_features: size of the input's last dimension, or ``None`` for a lazy first layer.
        out_features: size of the output's last dimension, or a shape: the output of shape
            ``[*B, prod(shape)]`` is then reshaped to ``[*B, *shape]``. Required.

    Keyword Args:
        depth: number of hidden layers. Defaults to ``len(num_cells)`` for a sequence, else 3.
            ``depth=0`` gives a single linear layer.
        num_cells: width of every hidden layer (an int) or one width per hidden layer.
            Defaults to 32.
        activation_class: activation module class. Defaults to ``nn.Tanh``.
        activation_kwargs: keyword arguments for ``activation_class``.
        norm_class: normalisation module class built as ``norm_class(width, **norm_kwargs)``
            after each hidden layer (``nn.LayerNorm``, ``nn.BatchNorm1d``...). Defaults to none.
        norm_kwargs: keyword arguments for ``norm_class``; when they name its first argument
            (``num_features``, as TorchRL's are written) the width is not passed again.
        dropout: dropout probability after each hidden activation. Defaults to none.
        bias_last_layer: whether the last layer has a bias. Defaults to ``True``.
        single_bias_last_layer: TorchRL's argument; only ``False`` (its default) is built,
            ``True`` raises ``NotImplementedError`` as TorchRL 0.14's does.
        layer_class: linear layer class, built as ``layer_class(in, out, bias=..., device=...,
            **layer_kwargs)``. Defaults to ``nn.Linear``. A lazy input needs ``nn.Linear``.
        layer_kwargs: keyword arguments for ``layer_class``.
        activate_last_layer: whether the last layer is followed by an activation (and norm).
            Defaults to ``False``.
        device: device of the parameters.

    Raises:
        ValueError: ``out_features`` is missing, ``depth`` contradicts ``num_cells``, or
            ``in_features=None`` with a ``layer_class`` other than ``nn.Linear``.

    Examples:
        >>> import torch
        >>> from rl_core.modules import MLP
        >>> net = MLP(out_features=2, num_cells=[16, 16])
        >>> net(torch.zeros(5, 3, 7)).shape
        torch.Size([5, 3, 2])
        >>> net = MLP(4, out_features=(2, 3), depth=1, num_cells=8)
        >>> net(torch.zeros(5, 4)).shape
        torch.Size([5, 2, 3])
    """

    def __init__(
        self,
        in_features: int | None = None,
        out_features: int | Sequence[int] | None = None,
        *,
        depth: int | None = None,
        num_cells: int | Sequence[int] | None = None,
        activation_class: type[nn.Module] = nn.Tanh,
        activation_kwargs: dict[str, Any] | None = None,
        norm_class: type[nn.Module] | None = None,
        norm_kwargs: dict[str, Any] | None = None,
        dropout: float | None = None,
        bias_last_layer: bool = True,
        single_bias_last_layer: bool = False,
        layer_class: type[nn.Module] = nn.Linear,
        layer_kwargs: dict[str, Any] | None = None,
        activate_last_layer: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        if single_bias_last_layer:
            raise NotImplementedError(
                "MLP: single_bias_last_layer=True is not built (TorchRL 0.14 refuses it too); "
                "leave it False."
            )
        self.in_features = in_features
        self.out_shape = _out_shape(out_features, "MLP")
        self.out_features = out_features
        widths = _hidden_widths(depth, num_cells, "MLP")
        self.num_cells = widths
        self.depth = len(widths)
        if in_features is None and layer_class is not nn.Linear:
            raise ValueError(
                f"MLP: in_features=None needs layer_class=nn.Linear (built as nn.LazyLinear), "
                f"got {layer_class.__name__}. Pass in_features."
            )
        activation_kwargs = activation_kwargs or {}
        norm_kwargs = norm_kwargs or {}
        layer_kwargs = layer_kwargs or {}

        sizes = [in_features, *widths, math.prod(self.out_shape)]
        layers: list[nn.Module] = []
        n_layers = len(sizes) - 1
        for i in range(n_layers):
            n_in, n_out = sizes[i], sizes[i + 1]
            last = i == n_layers - 1
            bias = bias_last_layer if last else True
            if n_in is None:
                layers.append(nn.LazyLinear(n_out, bias=bias, device=device, **layer_kwargs))
            else:
                layers.append(layer_class(n_in, n_out, bias=bias, device=device, **layer_kwargs))
            if not last or activate_last_layer:
                if norm_class is not None:
                    layers.append(_norm_layer(norm_class, n_out, norm_kwargs).to(device))
                layers.append(activation_class(**activation_kwargs))
                if dropout is not None:
                    layers.append(nn.Dropout(p=dropout))
        super().__init__(*layers)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        """Runs the stack on the inputs concatenated along the last dimension.

        Args:
            *inputs: tensors of shape ``[*B, n_i]`` (broadcast over ``B``), concatenated into
                ``[*B, in_features]``.

        Returns:
            A tensor of shape ``[*B, *out_shape]``.
        """
        if len(inputs) > 1:
            shapes = [t.shape[:-1] for t in inputs]
            if any(shape != shapes[0] for shape in shapes[1:]):
                # (torch.broadcast_shapes costs more than the small layers; skipped when the
                # batch shapes already agree, where expanding changes nothing)
                batch = torch.broadcast_shapes(*shapes)
                inputs = tuple(t.expand(*batch, t.shape[-1]) for t in inputs)
            x = torch.cat(inputs, dim=-1)
        else:
            (x,) = inputs
        out = super().forward(x)
        if len(self.out_shape) > 1:
            out = out.unflatten(-1, self.out_shape)
        return out


__all__ = ["MLP"]
