"""DQN-family networks: the factorised-noise ``NoisyLinear`` layer and the dueling CNN Q-net."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from rl_core.modules import MLP, ConvNet


def _scaled_noise(size: int, *, generator: torch.Generator | None, like: torch.Tensor):
    """``f(x) = sign(x) * sqrt(|x|)`` of ``x ~ N(0, 1)``, the factorised-noise transform."""
    x = torch.randn(size, generator=generator, device=like.device, dtype=like.dtype)
    return x.sign() * x.abs().sqrt()


class NoisyLinear(nn.Linear):
    """A linear layer with learned factorised Gaussian noise on its weights (NoisyNet).

    From Fortunato et al., "Noisy Networks for Exploration" (2017). The effective parameters
    are ``weight = weight_mu + weight_sigma * weight_epsilon`` and
    ``bias = bias_mu + bias_sigma * bias_epsilon`` with factorised noise
    ``weight_epsilon = f(eps_out) ⊗ f(eps_in)``, ``bias_epsilon = f(eps_out)``,
    ``f(x) = sign(x) sqrt(|x|)``, ``eps ~ N(0, 1)``. ``weight_mu`` and ``bias_mu`` start from
    ``U(-1/sqrt(in), 1/sqrt(in))``; ``weight_sigma`` starts at ``std_init / sqrt(in)`` and
    ``bias_sigma`` at ``std_init / sqrt(out)``.

    Noise is drawn at construction and by :meth:`reset_noise` only (the forward pass does not
    resample). In training mode the noisy parameters are used; in eval mode (``.eval()``)
    only the means are, so evaluation is deterministic.

    Args:
        in_features: size of the input's last dimension.
        out_features: size of the output's last dimension.
        bias: whether the layer has a (noisy) bias. Defaults to ``True``.
        device: device of the parameters.
        dtype: dtype of the parameters.
        std_init: initial noise scale ``sigma_0``. Defaults to 0.1.

    Raises:
        ValueError: ``std_init`` is negative.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import NoisyLinear
        >>> layer = NoisyLinear(4, 2)
        >>> x = torch.randn(3, 4)
        >>> layer(x).shape
        torch.Size([3, 2])
        >>> _ = layer.eval()
        >>> bool(torch.allclose(layer(x), x @ layer.weight_mu.T + layer.bias_mu))
        True
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        std_init: float = 0.1,
    ) -> None:
        if std_init < 0:
            raise ValueError(
                f"NoisyLinear: expected std_init >= 0, got {std_init}. Pass a non-negative "
                f"initial noise scale."
            )
        nn.Module.__init__(self)
        self.in_features = in_features
        self.out_features = out_features
        self.std_init = float(std_init)
        kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features, **kwargs))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features, **kwargs))
        self.register_buffer("weight_epsilon", torch.empty(out_features, in_features, **kwargs))
        if bias:
            self.bias_mu = nn.Parameter(torch.empty(out_features, **kwargs))
            self.bias_sigma = nn.Parameter(torch.empty(out_features, **kwargs))
            self.register_buffer("bias_epsilon", torch.empty(out_features, **kwargs))
        else:
            self.bias_mu = None
            self.bias_sigma = None
            self.bias_epsilon = None
        self.reset_parameters()
        self.reset_noise()

    def reset_parameters(self) -> None:
        """Re-draws the means uniformly and sets the noise scales to their initial values."""
        bound = 1.0 / math.sqrt(self.in_features)
        with torch.no_grad():
            self.weight_mu.uniform_(-bound, bound)
            self.weight_sigma.fill_(self.std_init / math.sqrt(self.in_features))
            if self.bias_mu is not None:
                self.bias_mu.uniform_(-bound, bound)
                self.bias_sigma.fill_(self.std_init / math.sqrt(self.out_features))

    def reset_noise(self, generator: torch.Generator | None = None) -> None:
        """Draws new factorised noise ``weight_epsilon`` and ``bias_epsilon``.

        Args:
            generator: optional random generator for reproducible noise.
        """
        eps_in = _scaled_noise(self.in_features, generator=generator, like=self.weight_mu)
        eps_out = _scaled_noise(self.out_features, generator=generator, like=self.weight_mu)
        with torch.no_grad():
            self.weight_epsilon.copy_(torch.outer(eps_out, eps_in))
            if self.bias_epsilon is not None:
                self.bias_epsilon.copy_(eps_out)

    @property
    def weight(self) -> torch.Tensor:  # type: ignore[override]
        """The weight in use: noisy in training mode, ``weight_mu`` in eval mode."""
        if self.training:
            return self.weight_mu + self.weight_sigma * self.weight_epsilon
        return self.weight_mu

    @property
    def bias(self) -> torch.Tensor | None:  # type: ignore[override]
        """The bias in use (``None`` without bias): noisy in training, ``bias_mu`` in eval."""
        if self.bias_mu is None:
            return None
        if self.training:
            return self.bias_mu + self.bias_sigma * self.bias_epsilon
        return self.bias_mu

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        """Applies ``input @ weight.T + bias`` with the weight of the current mode."""
        return F.linear(input, self.weight, self.bias)


def reset_noise(layer: nn.Module) -> None:
    """Calls ``layer.reset_noise()`` when it has one; a no-op otherwise.

    Meant for ``module.apply(reset_noise)``, which redraws the noise of every noisy layer.

    Examples:
        >>> import torch
        >>> from rl_core.modules import MLP
        >>> from rl_objectives.modules import NoisyLinear, reset_noise
        >>> net = MLP(3, 2, num_cells=[8], layer_class=NoisyLinear)
        >>> _ = net.apply(reset_noise)
        >>> net(torch.zeros(3)).shape
        torch.Size([2])
    """
    fn = getattr(layer, "reset_noise", None)
    if callable(fn):
        fn()


class DuelingCnnDQNet(nn.Module):
    """The dueling Q-network over images (Wang et al., 2016), TorchRL's Atari variant.

    A :class:`ConvNet` computes features; two MLP heads give the state value ``V`` (of width
    ``out_features_value``) and the advantages ``A`` (of width ``out_features``), combined as
    ``Q = V + A - mean(A)`` over the action dimension.

    Args:
        out_features: number of actions (width of the advantage head).
        out_features_value: width of the value head. Defaults to 1.
        cnn_kwargs: keyword arguments of the :class:`ConvNet`, merged over the defaults
            ``{"num_cells": [32, 64, 64], "strides": [4, 2, 1], "kernel_sizes": [8, 4, 3]}``
            (lazy input channels).
        mlp_kwargs: keyword arguments of both :class:`MLP` heads, merged over the defaults
            ``{"depth": 1, "activation_class": nn.ELU, "num_cells": 512,
            "bias_last_layer": True}`` (lazy input size).
        device: device of the parameters.

    Raises:
        ValueError: ``out_features`` or ``out_features_value`` is not positive, or
            ``out_features_value`` is neither 1 nor ``out_features``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import DuelingCnnDQNet
        >>> net = DuelingCnnDQNet(6, cnn_kwargs={"num_cells": [8, 8], "strides": [2, 1],
        ...     "kernel_sizes": [3, 3]}, mlp_kwargs={"num_cells": 16})
        >>> net(torch.zeros(5, 3, 12, 12)).shape
        torch.Size([5, 6])
    """

    def __init__(
        self,
        out_features: int,
        out_features_value: int = 1,
        cnn_kwargs: dict[str, Any] | None = None,
        mlp_kwargs: dict[str, Any] | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if out_features < 1 or out_features_value < 1:
            raise ValueError(
                f"DuelingCnnDQNet: expected positive out_features and out_features_value, got "
                f"{out_features} and {out_features_value}."
            )
        if out_features_value not in (1, out_features):
            raise ValueError(
                f"DuelingCnnDQNet: out_features_value must be 1 or out_features "
                f"({out_features}) to broadcast against the advantages, got "
                f"{out_features_value}."
            )
        cnn = {"num_cells": [32, 64, 64], "strides": [4, 2, 1], "kernel_sizes": [8, 4, 3]}
        cnn.update(cnn_kwargs or {})
        mlp: dict[str, Any] = {
            "depth": 1,
            "activation_class": nn.ELU,
            "num_cells": 512,
            "bias_last_layer": True,
        }
        mlp.update(mlp_kwargs or {})
        mlp.pop("out_features", None)
        self.out_features = out_features
        self.out_features_value = out_features_value
        self.features = ConvNet(device=device, **cnn)
        self.advantage = MLP(out_features=out_features, device=device, **mlp)
        self.value = MLP(out_features=out_features_value, device=device, **mlp)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Computes Q-values.

        Args:
            x: images of shape ``[*B, C, H, W]``.

        Returns:
            Q-values of shape ``[*B, out_features]``.
        """
        features = self.features(x)
        advantage = self.advantage(features)
        value = self.value(features)
        return value + advantage - advantage.mean(dim=-1, keepdim=True)


__all__ = ["DuelingCnnDQNet", "NoisyLinear", "reset_noise"]
