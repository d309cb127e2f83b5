"""The networks of the DDPG paper (Lillicrap et al., 2016), TorchRL's ``Ddpg*`` classes: MLP and
convolutional actors and Q-networks, their last layer drawn from a small uniform range."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from rl_core.modules import MLP, ConvNet
from rl_objectives.modules.net_layers import SquashDims


def ddpg_init_last_layer(
    module: nn.Module, scale: float = 6e-4, device: torch.device | str | None = None
) -> None:
    """Redraws the last ``Linear``/``Conv2d`` of ``module`` (its weight and bias) uniformly in
    ``[-scale / 2, scale / 2)``, as the DDPG paper initialises its output layers.

    Args:
        module: the network; its modules are searched from the last.
        scale: the width of the range. Defaults to ``6e-4``.
        device: unused (the layer's own device is kept); TorchRL's argument.

    Raises:
        ValueError: ``module`` holds no ``Linear`` or ``Conv2d``.

    Examples:
        >>> from rl_core.modules import MLP
        >>> net = MLP(4, 2, num_cells=[8])
        >>> ddpg_init_last_layer(net, scale=0.01)
        >>> bool(net[-1].weight.abs().max() <= 0.005)
        True
    """
    last = None
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            last = layer
    if last is None:
        raise ValueError(
            f"ddpg_init_last_layer: {type(module).__name__} holds no nn.Linear or nn.Conv2d."
        )
    if isinstance(last, nn.modules.lazy.LazyModuleMixin) and last.has_uninitialized_params():
        raise ValueError(
            f"ddpg_init_last_layer: the last layer of {type(module).__name__} is lazy (its "
            f"input size is not known yet); give in_features or run the network once first."
        )
    with torch.no_grad():
        last.weight.uniform_(-scale / 2, scale / 2)
        if last.bias is not None:
            last.bias.uniform_(-scale / 2, scale / 2)


def _merged(defaults: dict[str, Any], given: dict[str, Any] | None) -> dict[str, Any]:
    out = dict(defaults)
    out.update(given or {})
    return out


def _conv_defaults(widths: list[int], use_avg_pooling: bool) -> dict[str, Any]:
    return {
        "in_features": None,
        "num_cells": widths,
        "kernel_sizes": [8, 4, 3],
        "strides": [4, 2, 1],
        "paddings": [0, 0, 1],
        "activation_class": nn.ELU,
        "aggregator_class": nn.AdaptiveAvgPool2d if use_avg_pooling else SquashDims,
        "aggregator_kwargs": {"output_size": (1, 1)} if use_avg_pooling else {"ndims_in": 3},
        "squeeze_output": use_avg_pooling,
    }


class DdpgMlpActor(nn.Module):
    """The DDPG actor over observation vectors: an MLP ``[*B, obs] -> [*B, action_dim]``
    (hidden 400 and 300, ELU; the last layer drawn in ``[-3e-3, 3e-3)``).

    Args:
        action_dim: the action size.
        mlp_net_kwargs: :class:`~rl_core.modules.MLP` arguments over those defaults (lazy
            input size).
        device: device of the parameters.

    Examples:
        >>> import torch
        >>> DdpgMlpActor(4, mlp_net_kwargs={"in_features": 10})(torch.zeros(2, 10)).shape
        torch.Size([2, 4])
    """

    def __init__(
        self,
        action_dim: int,
        mlp_net_kwargs: dict[str, Any] | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        defaults = {"in_features": None, "out_features": action_dim, "num_cells": [400, 300],
                    "activation_class": nn.ELU}  # fmt: skip
        self.mlp = MLP(device=device, **_merged(defaults, mlp_net_kwargs))
        ddpg_init_last_layer(self.mlp, 6e-3)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.mlp(observation)


class DdpgMlpQNet(nn.Module):
    """The DDPG critic over observation vectors: ``mlp2(cat(mlp1(obs), action)) -> [*B, 1]``
    (the action enters after the first layer; ``mlp1``: one ELU layer of 400, ``mlp2``: 300
    then 1, its last layer drawn in ``[-3e-3, 3e-3)``).

    Args:
        mlp_net_kwargs_net1: arguments of ``mlp1`` over those defaults (lazy input size).
        mlp_net_kwargs_net2: arguments of ``mlp2`` over those defaults (lazy input size).
        device: device of the parameters.

    Examples:
        >>> import torch
        >>> q = DdpgMlpQNet()
        >>> q(torch.zeros(2, 10), torch.zeros(2, 3)).shape
        torch.Size([2, 1])
    """

    def __init__(
        self,
        mlp_net_kwargs_net1: dict[str, Any] | None = None,
        mlp_net_kwargs_net2: dict[str, Any] | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        net1 = {"in_features": None, "out_features": 400, "depth": 0, "activation_class": nn.ELU,
                "activate_last_layer": True}  # fmt: skip
        net2 = {"in_features": None, "out_features": 1, "num_cells": [300],
                "activation_class": nn.ELU}  # fmt: skip
        self.mlp1 = MLP(device=device, **_merged(net1, mlp_net_kwargs_net1))
        self.mlp2 = MLP(device=device, **_merged(net2, mlp_net_kwargs_net2))
        ddpg_init_last_layer(self.mlp2, 6e-3)

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.mlp2(torch.cat([self.mlp1(observation), action], -1))


class DdpgCnnActor(nn.Module):
    """The DDPG actor over images: a :class:`~rl_core.modules.ConvNet` (32, 64, 64 channels,
    kernels 8/4/3, strides 4/2/1, flattened; or averaged with ``use_avg_pooling``) then an MLP
    (two ELU layers of 200); returns ``(action, hidden)``.

    Args:
        action_dim: the action size.
        conv_net_kwargs: ConvNet arguments over those defaults.
        mlp_net_kwargs: MLP arguments over those defaults.
        use_avg_pooling: average the feature maps instead of flattening them. Defaults to
            False.
        device: device of the parameters.

    Examples:
        >>> import torch
        >>> action, hidden = DdpgCnnActor(4)(torch.zeros(2, 3, 64, 64))
        >>> action.shape, hidden.shape
        (torch.Size([2, 4]), torch.Size([2, 2304]))
    """

    def __init__(
        self,
        action_dim: int,
        conv_net_kwargs: dict[str, Any] | None = None,
        mlp_net_kwargs: dict[str, Any] | None = None,
        use_avg_pooling: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        conv = _merged(_conv_defaults([32, 64, 64], use_avg_pooling), conv_net_kwargs)
        mlp = {"in_features": None, "out_features": action_dim, "depth": 2, "num_cells": 200,
               "activation_class": nn.ELU}  # fmt: skip
        self.convnet = ConvNet(device=device, **conv)
        self.mlp = MLP(device=device, **_merged(mlp, mlp_net_kwargs))
        ddpg_init_last_layer(self.mlp, 6e-4)

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.convnet(observation)
        return self.mlp(hidden), hidden


class DdpgCnnQNet(nn.Module):
    """The DDPG critic over images: ``mlp(cat(convnet(obs), action)) -> [*B, 1]`` (32, 64, 128
    channels averaged to one value each by default, then two ELU layers of 200).

    Args:
        conv_net_kwargs: ConvNet arguments over those defaults.
        mlp_net_kwargs: MLP arguments over those defaults.
        use_avg_pooling: average the feature maps (the default) instead of flattening them.
        device: device of the parameters.

    Examples:
        >>> import torch
        >>> DdpgCnnQNet()(torch.zeros(2, 3, 64, 64), torch.zeros(2, 4)).shape
        torch.Size([2, 1])
    """

    def __init__(
        self,
        conv_net_kwargs: dict[str, Any] | None = None,
        mlp_net_kwargs: dict[str, Any] | None = None,
        use_avg_pooling: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        conv = _merged(_conv_defaults([32, 64, 128], use_avg_pooling), conv_net_kwargs)
        mlp = {"in_features": None, "out_features": 1, "depth": 2, "num_cells": 200,
               "activation_class": nn.ELU}  # fmt: skip
        self.convnet = ConvNet(device=device, **conv)
        self.mlp = MLP(device=device, **_merged(mlp, mlp_net_kwargs))
        ddpg_init_last_layer(self.mlp, 6e-4)

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([self.convnet(observation), action], -1))


__all__ = ["DdpgCnnActor", "DdpgCnnQNet", "DdpgMlpActor", "DdpgMlpQNet", "ddpg_init_last_layer"]
