"""Categorical: integer indices in ``[0, n)``, with an optional action mask."""

from __future__ import annotations

from typing import Any

import torch

from rl_core.specs._base import DeviceLike, ShapeLike, _as_device, _as_dtype, _as_size
from rl_core.specs._box import CategoricalBox
from rl_core.specs._discrete import (
    _check_index_args,
    _check_index_dtype,
    _check_int,
    _check_mask,
    _nearest_valid,
    _sample_masked,
)
from rl_core.specs._leaf import _fmt_values, _LeafSpec


def _check_categorical_dtype(n: int, dtype: torch.dtype, where: str) -> None:
    """Indices of ``n`` choices: an integer dtype that holds ``n - 1``, or bool for 2."""
    if dtype is torch.bool:
        # Binary choices stored as flags: the done/terminated/truncated specs.
        if n > 2:
            raise TypeError(
                f"{where}: dtype torch.bool holds 2 choices, got n={n}. Use an integer "
                f"dtype such as torch.int64."
            )
        return
    _check_index_dtype(dtype, where)
    if n - 1 > torch.iinfo(dtype).max:
        raise ValueError(
            f"{where}: n={n} does not fit dtype {dtype} (max {torch.iinfo(dtype).max})."
        )


class Categorical(_LeafSpec):
    """Integer indices in ``[0, n)``: one discrete choice per element.

    Unlike :class:`OneHot`, there is no event dim: every dim of ``shape`` is a batch dim, and
    each element is one choice among ``n``.

    Args:
        n: the number of choices.
        shape: the full shape of a value. Defaults to ``()`` (one choice).
        device: the device of the values, or ``None`` for none pinned. Defaults to ``None``.
        dtype: an integer dtype. Defaults to ``torch.int64`` (also for ``None``).

    Keyword Args:
        mask: a bool tensor broadcastable to ``(*shape, n)``, True for the valid choices, or
            ``None`` (all valid). :meth:`rand` samples only valid choices and :meth:`is_in`
            rejects the others. Change it with :meth:`update_mask`.

    Raises:
        TypeError: ``n`` is not an int, ``dtype`` is not an integer dtype, or the mask is not
            a bool tensor.
        ValueError: ``n < 1``, ``n`` does not fit ``dtype``, or the mask has the wrong shape
            or a row without any valid choice.

    Examples:
        >>> import torch
        >>> from rl_core.specs import Categorical
        >>> spec = Categorical(4, shape=(2,))
        >>> spec
        Categorical(shape=(2,), dtype=int64, n=4)
        >>> spec.is_in(torch.tensor([0, 3])), spec.is_in(torch.tensor([0, 4]))
        (True, False)
        >>> spec.update_mask(torch.tensor([False, False, True, False]))
        >>> spec.rand()
        tensor([2, 2])
        >>> q_values = torch.tensor([[0.1, 0.2, 0.3, 0.4], [1.0, 2.0, 3.0, 4.0]])
        >>> spec.index(torch.tensor([3, 0]), q_values)
        tensor([[0.4000],
                [1.0000]])
    """

    _params = ("mask",)
    _attrs = ("n",)

    def __init__(
        self,
        n: int,
        shape: ShapeLike = (),
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.int64,
        *,
        mask: torch.Tensor | None = None,
    ) -> None:
        n = _check_int(n, "Categorical")
        dtype = _as_dtype(dtype, "Categorical", default=torch.int64)
        _check_categorical_dtype(n, dtype, "Categorical")
        size = _as_size(shape, "Categorical")
        device = _as_device(device, "Categorical")
        super().__init__(size, device, dtype)
        self.n = n
        self.mask = _check_mask(mask, torch.Size((*size, n)), device, "Categorical")

    @property
    def space(self) -> CategoricalBox:
        """TorchRL's ``CategoricalBox(n)``."""
        return CategoricalBox(self.n)

    def _check_dtype(self, dtype: torch.dtype, where: str) -> None:
        _check_categorical_dtype(self.n, dtype, where)

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets the action mask in place: a bool tensor broadcastable to ``(*shape, n)`` (True =
        valid), or ``None`` to allow every choice. ``TypeError`` for a non-bool mask,
        ``ValueError`` for a wrong shape or a row without any valid choice.
        """
        shape = torch.Size((*self.shape, self.n))
        self.mask = _check_mask(mask, shape, self.device, "Categorical.update_mask")

    def rand(self, shape: ShapeLike = ()) -> torch.Tensor:
        """Samples valid indices uniformly."""
        size = self._full(shape)
        if self.mask is None:
            return torch.randint(0, self.n, size, dtype=self._dtype, device=self.device)
        return _sample_masked(self.mask, size).to(self._dtype)

    def _domain_failure(self, value: torch.Tensor) -> str | None:
        inside = (value >= 0) & (value < self.n)
        if not bool(inside.all()):
            at = tuple(int(i) for i in (~inside).nonzero()[0])
            return f"is outside [0, {self.n - 1}]: {value[at].item()} at index {at}"
        if self.mask is not None:
            valid = self.mask.gather(-1, value.long().unsqueeze(-1)).squeeze(-1)
            if not bool(valid.all()):
                at = tuple(int(i) for i in (~valid).nonzero()[0])
                return f"is a masked-out action: {value[at].item()} at index {at}"
        return None

    def project(self, value: Any) -> torch.Tensor:
        """Maps ``value`` to a valid index.

        Floats are rounded, everything is clamped to ``[0, n - 1]``, and with a mask each
        masked-out index is replaced by the closest valid one (the lower on ties).
        """
        value = self._project_input(value)
        if value.shape != self.shape:  # leading batch dims: project element by element
            return self._for_value(value).project(value)
        if value.is_floating_point():
            value = torch.nan_to_num(value.double().round(), nan=0.0)
        value = value.clamp(0, self.n - 1).long()
        if self.mask is not None:
            value = _nearest_valid(value, self.mask)
        return value.to(self._dtype)

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Picks, along the last dim of ``tensor_to_index`` (``(*B, n)``), the entries named by
        ``index`` (integer indices of shape ``B``).

        The rule shared by every discrete spec: the result has one value per sub-action along the
        last dim, so ``(*B, 1)`` here (e.g. the chosen action value from Q-values of shape
        ``[..., n]``). Raises ``TypeError`` for a non-tensor argument and ``ValueError`` for
        mismatched shapes.
        """
        _check_index_args(index, tensor_to_index, self.n, "Categorical.index")
        return tensor_to_index.gather(-1, index.long().unsqueeze(-1))

    def cardinality(self) -> int:
        """The number of choices per element, ``n``."""
        return self.n

    def _repr_extra(self) -> list[str]:
        extra = [f"n={self.n}"]
        if self.mask is not None:
            extra.append(f"mask={_fmt_values(self.mask)}")
        return extra
