"""Shape layers of TorchRL's network builders: ``SquashDims``, ``SqueezeLayer``, ``Squeeze2dLayer``."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class SquashDims(nn.Module):
    """Flattens the last ``ndims_in`` dims of its input into one (TorchRL's ``SquashDims``):
    ``[*B, C, H, W] -> [*B, C * H * W]`` with the default 3.

    Args:
        ndims_in: how many trailing dims to flatten, at least 1. Defaults to 3.

    Raises:
        ValueError: ``ndims_in`` is below 1, or the input has fewer dims.

    Examples:
        >>> import torch
        >>> SquashDims()(torch.zeros(5, 2, 3, 4)).shape
        torch.Size([5, 24])
    """

    def __init__(self, ndims_in: int = 3) -> None:
        super().__init__()
        if isinstance(ndims_in, bool) or not isinstance(ndims_in, int) or ndims_in < 1:
            raise ValueError(f"SquashDims: ndims_in must be an integer >= 1, got {ndims_in!r}.")
        self.ndims_in = ndims_in

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        if value.ndim < self.ndims_in:
            raise ValueError(
                f"SquashDims: expected an input of at least {self.ndims_in} dims, got shape "
                f"{tuple(value.shape)}."
            )
        return value.flatten(-self.ndims_in)

    def extra_repr(self) -> str:
        return f"ndims_in={self.ndims_in}"


class SqueezeLayer(nn.Module):
    """Removes the given singleton dims (negative indices, squeezed in order; TorchRL's
    ``SqueezeLayer``).

    Args:
        dims: the dims to squeeze, each negative. Defaults to ``(-1,)``.

    Raises:
        ValueError: a dim is not negative; the input's size at a dim is not 1.

    Examples:
        >>> import torch
        >>> SqueezeLayer((-1,))(torch.zeros(4, 3, 1)).shape
        torch.Size([4, 3])
    """

    def __init__(self, dims: Sequence[int] = (-1,)) -> None:
        super().__init__()
        dims = tuple(dims)
        if not dims or any(not isinstance(dim, int) or dim >= 0 for dim in dims):
            raise ValueError(f"SqueezeLayer: dims must be negative integers, got {dims}.")
        self.dims = dims

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        for dim in self.dims:
            if value.ndim < -dim or value.shape[dim] != 1:
                raise ValueError(
                    f"{type(self).__name__}: cannot squeeze dim {dim} of an input of shape "
                    f"{tuple(value.shape)} (squeezing dims {self.dims}); it must be 1."
                )
            value = value.squeeze(dim)
        return value

    def extra_repr(self) -> str:
        return f"dims={self.dims}"


class Squeeze2dLayer(SqueezeLayer):
    """Removes the two trailing singleton dims of a convolution's ``[*B, C, 1, 1]`` output
    (TorchRL's ``Squeeze2dLayer``).

    Examples:
        >>> import torch
        >>> Squeeze2dLayer()(torch.zeros(4, 8, 1, 1)).shape
        torch.Size([4, 8])
    """

    def __init__(self) -> None:
        super().__init__((-2, -1))


__all__ = ["SquashDims", "Squeeze2dLayer", "SqueezeLayer"]
