"""Unbounded: any value of a given shape and dtype."""

from __future__ import annotations

from typing import Any

import torch

from rl_core.specs._base import DeviceLike, ShapeLike, _as_device, _as_dtype, _as_size
from rl_core.specs._box import ContinuousBox
from rl_core.specs._leaf import _LeafSpec


class Unbounded(_LeafSpec):
    """Any value of a given shape and dtype: observations and rewards without bounds.

    A floating dtype gives a continuous space, an integer or bool dtype a discrete one.
    :meth:`rand` draws from a standard normal for floats, uniformly over the dtype's range
    for integers (the largest value excluded) and fair coins for bool.

    Args:
        shape: the full shape of a value, batch dims included. Defaults to ``()``.
        device: the device of the values, or ``None`` for none pinned (see
            :class:`TensorSpec`). Defaults to ``None``.
        dtype: the dtype of the values. Defaults to ``torch.float32``; ``None`` means
            torch's default dtype (as TorchRL).

    Raises:
        TypeError: ``shape``, ``device`` or ``dtype`` has the wrong type.
        ValueError: ``shape`` has a negative dim.

    Examples:
        >>> import torch
        >>> from rl_core.specs import Unbounded
        >>> spec = Unbounded(shape=(4, 1))
        >>> spec
        Unbounded(shape=(4, 1), dtype=float32)
        >>> spec.rand((2,)).shape
        torch.Size([2, 4, 1])
        >>> spec.is_in(torch.zeros(4, 1)), spec.is_in(torch.zeros(4, 1, dtype=torch.float64))
        (True, False)
    """

    def __init__(
        self,
        shape: ShapeLike = (),
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.float32,
    ) -> None:
        super().__init__(
            _as_size(shape, "Unbounded"),
            _as_device(device, "Unbounded"),
            _as_dtype(dtype, "Unbounded", default=torch.get_default_dtype()),
        )

    @property
    def space(self) -> ContinuousBox:
        """The dtype's whole range, filled to the spec's shape (TorchRL's ``ContinuousBox``)."""
        dtype = self._dtype
        if dtype is torch.bool:
            lo, hi = False, True
        else:
            info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
            lo, hi = info.min, info.max
        full = {"size": self.shape, "dtype": dtype, "device": self.device}
        return ContinuousBox(torch.full(fill_value=lo, **full), torch.full(fill_value=hi, **full))

    @property
    def domain(self) -> str:
        """``"continuous"`` for floating dtypes, else ``"discrete"``."""
        return "continuous" if self._dtype.is_floating_point else "discrete"

    def rand(self, shape: ShapeLike = ()) -> torch.Tensor:
        """Samples normal floats, uniform integers over the dtype's range, or random bools."""
        size = self._full(shape)
        dtype = self._dtype
        if dtype.is_floating_point or dtype.is_complex:
            return torch.randn(size, dtype=dtype, device=self.device)
        if dtype is torch.bool:
            return torch.randint(0, 2, size, dtype=torch.bool, device=self.device)
        info = torch.iinfo(dtype)
        return torch.randint(info.min, info.max, size, dtype=dtype, device=self.device)

    def project(self, value: Any) -> torch.Tensor:
        """Casts ``value`` to the spec's dtype (and device)."""
        return self._project_input(value).to(self._dtype)
