"""DuelingMlpDQNet: the dueling Q-network over observation vectors (Wang et al., 2016)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from rl_core.modules import MLP


class DuelingMlpDQNet(nn.Module):
    """The dueling Q-network over vectors (TorchRL's ``DuelingMlpDQNet``): an MLP computes
    features (two ELU layers of 256, then 256 activated), two MLP heads (one ELU layer of 512)
    give the state value ``V`` and the advantages ``A``, combined as
    ``Q = V + A - mean(A)`` over the last dim. The biases of the layers whose input size is
    known at construction start at zero (a lazy first layer keeps its default draw).

    Args:
        out_features: number of actions (an int), or the advantage head's output shape.
        out_features_value: width of the value head. Defaults to 1.
        mlp_kwargs_feature: :class:`~rl_core.modules.MLP` arguments of the feature network
            over those defaults (lazy input size).
        mlp_kwargs_output: MLP arguments of both heads over those defaults.
        device: device of the parameters.

    Examples:
        >>> import torch
        >>> net = DuelingMlpDQNet(3, mlp_kwargs_feature={"num_cells": [16], "out_features": 8},
        ...                       mlp_kwargs_output={"num_cells": 8})
        >>> net(torch.zeros(5, 4)).shape
        torch.Size([5, 3])
    """

    def __init__(
        self,
        out_features: int | torch.Size | tuple[int, ...],
        out_features_value: int = 1,
        mlp_kwargs_feature: dict[str, Any] | None = None,
        mlp_kwargs_output: dict[str, Any] | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        feature: dict[str, Any] = {"num_cells": [256, 256], "out_features": 256,
                                   "activation_class": nn.ELU, "activate_last_layer": True}  # fmt: skip
        feature.update(mlp_kwargs_feature or {})
        output: dict[str, Any] = {"depth": 1, "activation_class": nn.ELU, "num_cells": 512,
                                  "bias_last_layer": True}  # fmt: skip
        output.update(mlp_kwargs_output or {})
        output.pop("out_features", None)
        self.out_features = out_features
        self.out_features_value = out_features_value
        self.features = MLP(device=device, **feature)
        self.advantage = MLP(out_features=out_features, device=device, **output)
        self.value = MLP(out_features=out_features_value, device=device, **output)
        for layer in self.modules():
            lazy = isinstance(layer, nn.modules.lazy.LazyModuleMixin)
            if isinstance(layer, nn.Linear) and not lazy and layer.bias is not None:
                nn.init.zeros_(layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[*B, obs]`` -> Q-values ``[*B, *out_features]``."""
        features = self.features(x)
        advantage = self.advantage(features)
        value = self.value(features)
        # a multi-dim advantage shape [*B, *lead, n]: the value [*B, v] broadcasts over lead
        lead = [1] * (advantage.ndim - value.ndim)
        value = value.reshape(*value.shape[:-1], *lead, value.shape[-1])
        return value + advantage - advantage.mean(dim=-1, keepdim=True)


__all__ = ["DuelingMlpDQNet"]
