"""OneHot: one choice among ``n`` encoded as a one-hot vector, with an optional mask."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.nn.functional import one_hot

from rl_core.specs._base import DeviceLike, ShapeLike, _as_device, _as_dtype, _as_size, _fmt_shape
from rl_core.specs._box import CategoricalBox
from rl_core.specs._discrete import (
    _check_index_args,
    _check_int,
    _check_mask,
    _masked_out_failure,
    _sample_masked,
)
from rl_core.specs._leaf import _fmt_values, _LeafSpec


class OneHot(_LeafSpec):
    """One choice among ``n``, as a one-hot vector along the last dim.

    The last dim (of size ``n``) is the event dim: it is never indexed, squeezed or
    reshaped. The leading dims are batch dims.

    Args:
        n: the number of choices.
        shape: the full shape of a value; ``shape[-1]`` must be ``n``. Defaults to ``(n,)``.
        device: the device of the values, or ``None`` for none pinned. Defaults to ``None``.
        dtype: the dtype of the vectors (bool, integer or floating). Defaults to
            ``torch.bool`` (also for ``None``).

    Keyword Args:
        mask: a bool tensor broadcastable to ``shape``, True for the valid choices, or
            ``None`` (all valid). Change it with :meth:`update_mask`.

    Raises:
        TypeError: ``n`` is not an int, or the mask is not a bool tensor.
        ValueError: ``n < 1``, ``shape[-1] != n``, or the mask has the wrong shape or a row
            without any valid choice.

    Examples:
        >>> import torch
        >>> from rl_core.specs import OneHot
        >>> spec = OneHot(3, dtype=torch.int64)
        >>> spec
        OneHot(shape=(3,), dtype=int64, n=3)
        >>> spec.encode(2)
        tensor([0, 0, 1])
        >>> spec.to_numpy(torch.tensor([0, 1, 0]))
        array(1)
        >>> spec.project(torch.tensor([0.2, -1.0, 0.7]))
        tensor([0, 0, 1])
        >>> spec.index(torch.tensor([0, 1, 0]), torch.tensor([10.0, 20.0, 30.0]))
        tensor([20.])
    """

    _params = ("mask",)
    _attrs = ("n",)
    _event_ndim = 1

    def __init__(
        self,
        n: int,
        shape: ShapeLike | None = None,
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.bool,
        *,
        mask: torch.Tensor | None = None,
    ) -> None:
        n = _check_int(n, "OneHot")
        size = torch.Size((n,)) if shape is None else _as_size(shape, "OneHot")
        if not size or size[-1] != n:
            raise ValueError(
                f"OneHot: expected shape[-1] == n == {n}, got shape={_fmt_shape(size)}. Use "
                f"shape=(*batch, {n})."
            )
        dtype = _as_dtype(dtype, "OneHot", default=torch.bool)
        if dtype.is_complex:
            raise TypeError(f"OneHot: expected a bool, integer or floating dtype, got {dtype}.")
        device = _as_device(device, "OneHot")
        super().__init__(size, device, dtype)
        self.n = n
        self.mask = _check_mask(mask, size, device, "OneHot")
        self._refresh()

    @property
    def space(self) -> CategoricalBox:
        """TorchRL's ``CategoricalBox(n)``."""
        return CategoricalBox(self.n)

    def _check_dtype(self, dtype: torch.dtype, where: str) -> None:
        if dtype.is_complex:
            raise TypeError(f"{where}: expected a bool, integer or floating dtype, got {dtype}.")

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets the action mask in place: a bool tensor broadcastable to ``shape`` (True = valid),
        or ``None``. ``TypeError`` for a non-bool mask, ``ValueError`` for a wrong shape or
        a row without any valid choice.
        """
        self.mask = _check_mask(mask, self.shape, self.device, "OneHot.update_mask")

    def rand(self, shape: ShapeLike = ()) -> torch.Tensor:
        """Samples valid one-hot vectors uniformly."""
        full = self._full(shape)
        if self.mask is None:
            # Indices drawn with a trailing dim of 1 (the same draws as of shape full[:-1]),
            # so one comparison with arange(n) makes the one-hot vectors (faster than one_hot).
            idx = torch.randint(0, self.n, (*full[:-1], 1), device=self.device)
        else:
            idx = _sample_masked(self.mask, full[:-1]).unsqueeze(-1)
        arange = self._arange
        if arange.device != idx.device:
            arange = arange.to(idx.device)
        hot = torch.eq(idx, arange)
        return hot if self._dtype is torch.bool else hot.to(self._dtype)

    def _refresh(self) -> None:
        self._arange = torch.arange(self.n, device=self.device)

    def _domain_failure(self, value: torch.Tensor) -> str | None:
        if self._dtype is not torch.bool and not bool(((value == 0) | (value == 1)).all()):
            return "has entries other than 0 and 1, expected a one-hot vector"
        count = value.sum(-1)
        if not bool((count == 1).all()):
            at = tuple(int(i) for i in (count != 1).nonzero()[0])
            return (
                f"is not one-hot: the vector at batch index {at} has {int(count[at])} ones, "
                f"expected exactly 1"
            )
        return _masked_out_failure(value, self.mask)

    def project(self, value: Any) -> torch.Tensor:
        """Maps ``value`` (scores) to the one-hot vector of its argmax among valid choices.

        NaN entries count as the lowest score; ties go to the lower index.
        """
        value = self._project_input(value).double()
        if value.shape != self.shape:  # leading batch dims: project element by element
            return self._for_value(value).project(value)
        big = torch.finfo(torch.float64).max
        scores = torch.nan_to_num(value, nan=-big, posinf=big, neginf=-big)
        if self.mask is not None:
            scores = scores.masked_fill(~self.mask, float("-inf"))
        return one_hot(scores.argmax(-1), self.n).to(self._dtype)

    def encode(self, value: Any, *, ignore_device: bool = False) -> torch.Tensor:
        """Converts a one-hot array, or integer indices of shape ``self.shape[:-1]`` (a gym
        ``Discrete`` sample), to a one-hot tensor; otherwise as :meth:`TensorSpec.encode`.
        """
        out = self._as_tensor(value, None, None if ignore_device else self.device)
        if out.shape == self.shape:
            return out.to(self._dtype)
        if out.shape == self.shape[:-1] and not out.is_floating_point() and out.dtype != torch.bool:
            return one_hot(out.long(), self.n).to(self._dtype)
        self._raise_encode_shape(
            out.shape, f" (or integer indices of shape {_fmt_shape(self.shape[:-1])})"
        )

    def to_numpy(self, value: torch.Tensor, *, safe: bool = False) -> np.ndarray:
        """Converts one-hot vectors ``(..., n)`` to int64 numpy *indices* ``(...)``, as gym
        ``Discrete`` spaces expect; :meth:`encode` maps them back.
        """
        if safe:
            self.assert_is_in(value)
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"OneHot.to_numpy: expected a torch.Tensor, got {type(value).__name__}."
            )
        return (
            value.detach()
            .to(torch.uint8 if value.dtype is torch.bool else value.dtype)
            .argmax(-1)
            .cpu()
            .numpy()
        )

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Picks the entries the one-hot ``index`` selects in ``tensor_to_index`` (both
        ``(*B, n)``), as :meth:`Categorical.index`: the result is ``(*B, 1)``.
        """
        _check_index_args(index, tensor_to_index, self.n, "OneHot.index", event_size=self.n)
        hot = index.to(torch.uint8) if index.dtype is torch.bool else index
        return tensor_to_index.gather(-1, hot.argmax(-1, keepdim=True))

    def cardinality(self) -> int:
        """The number of choices per vector, ``n``."""
        return self.n

    def _repr_extra(self) -> list[str]:
        extra = [f"n={self.n}"]
        if self.mask is not None:
            extra.append(f"mask={_fmt_values(self.mask)}")
        return extra
