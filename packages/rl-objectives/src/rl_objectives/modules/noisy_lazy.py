"""A :class:`~rl_objectives.modules.NoisyLinear` whose input size is read from its first input:
:class:`NoisyLazyLinear`."""

from __future__ import annotations

import torch
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedBuffer, UninitializedParameter

from rl_objectives.modules.dqn_nets import NoisyLinear

__all__ = ["NoisyLazyLinear"]


class NoisyLazyLinear(LazyModuleMixin, NoisyLinear):
    """:class:`NoisyLinear` with ``in_features`` inferred from the first input.

    The parameters and noise buffers stay uninitialised until the first call, which sizes
    them from the input's last dimension, draws the means and noise as :class:`NoisyLinear`
    does, and turns the module into a :class:`NoisyLinear`.

    Args:
        out_features: size of the output's last dimension.
        bias: whether the layer has a (noisy) bias. Defaults to ``True``.
        device: device of the parameters.
        dtype: dtype of the parameters.
        std_init: initial noise scale ``sigma_0``. Defaults to 0.5 (as TorchRL's lazy layer).

    Raises:
        ValueError: ``out_features`` is not a positive integer or ``std_init`` is negative.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import NoisyLazyLinear, NoisyLinear
        >>> layer = NoisyLazyLinear(2)
        >>> layer(torch.randn(5, 7)).shape
        torch.Size([5, 2])
        >>> type(layer) is NoisyLinear, layer.in_features
        (True, 7)
    """

    cls_to_become = NoisyLinear
    weight_mu: UninitializedParameter
    weight_sigma: UninitializedParameter

    def __init__(
        self,
        out_features: int,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        std_init: float = 0.5,
    ) -> None:
        if isinstance(out_features, bool) or not isinstance(out_features, int) or out_features < 1:
            raise ValueError(
                f"NoisyLazyLinear: expected out_features to be an integer >= 1, got {out_features!r}."
            )
        super().__init__(0, 0, bias, device=device, dtype=dtype, std_init=std_init)
        kwargs = {"device": device, "dtype": dtype}
        self.out_features = out_features
        self.weight_mu = UninitializedParameter(**kwargs)
        self.weight_sigma = UninitializedParameter(**kwargs)
        self.weight_epsilon = UninitializedBuffer(**kwargs)
        if bias:
            self.bias_mu = UninitializedParameter(**kwargs)
            self.bias_sigma = UninitializedParameter(**kwargs)
            self.bias_epsilon = UninitializedBuffer(**kwargs)

    def reset_parameters(self) -> None:
        """Draws the means and sets the noise scales, once the input size is known."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def reset_noise(self, generator: torch.Generator | None = None) -> None:
        """Draws new noise, once the input size is known (a no-op before)."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_noise(generator)

    def initialize_parameters(self, input: torch.Tensor) -> None:
        """Sizes every parameter and buffer from ``input``'s last dimension."""
        if not self.has_uninitialized_params():
            return
        with torch.no_grad():
            self.in_features = input.shape[-1]
            shape = (self.out_features, self.in_features)
            self.weight_mu.materialize(shape)
            self.weight_sigma.materialize(shape)
            self.weight_epsilon.materialize(shape)
            if self.bias_mu is not None:
                self.bias_mu.materialize((self.out_features,))
                self.bias_sigma.materialize((self.out_features,))
                self.bias_epsilon.materialize((self.out_features,))
            self.reset_parameters()
            self.reset_noise()
