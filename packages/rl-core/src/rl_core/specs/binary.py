"""Binary: ``n`` independent 0/1 entries along the last dim."""

from __future__ import annotations

from typing import Any

import torch

from rl_core.specs._base import DeviceLike, ShapeLike, _as_device, _as_dtype, _as_size, _fmt_shape
from rl_core.specs._box import CategoricalBox
from rl_core.specs._discrete import _check_int
from rl_core.specs._leaf import _LeafSpec


class Binary(_LeafSpec):
    """``n`` independent binary entries (0 or 1) along the last dim: the gym ``MultiBinary``.

    Every entry is independent, so every dim can be indexed, reshaped or unsqueezed, and
    ``n`` follows the last dim (as in TorchRL: ``Binary(1).unsqueeze(-1)`` has shape
    ``(1, 1)``). :meth:`project` thresholds: an entry becomes 1 when it is ``> 0.5`` (so
    ``True``/1 stay 1 and ``False``/0 stay 0), NaN becomes 0.

    Args:
        n: the number of entries; defaults to ``shape[-1]``.
        shape: the full shape of a value; ``shape[-1]`` must be ``n``. Defaults to ``(n,)``.
        device: the device of the values, or ``None`` for none pinned. Defaults to ``None``.
        dtype: the dtype (bool, integer or floating). Defaults to ``torch.int8`` (also for
            ``None``).

    Raises:
        TypeError: bad ``n`` or ``dtype``.
        ValueError: neither ``n`` nor ``shape`` is given, ``n < 1``, or ``shape[-1] != n``.

    Examples:
        >>> import torch
        >>> from rl_core.specs import Binary
        >>> spec = Binary(3)
        >>> spec
        Binary(shape=(3,), dtype=int8, n=3)
        >>> spec.project(torch.tensor([0.2, 0.7, 1.5]))
        tensor([0, 1, 1], dtype=torch.int8)
        >>> spec.is_in(torch.tensor([0, 1, 2], dtype=torch.int8)), spec.cardinality()
        (False, 8)
    """

    _attrs = ("n",)

    def __init__(
        self,
        n: int | None = None,
        shape: ShapeLike | None = None,
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.int8,
    ) -> None:
        if n is None and shape is None:
            raise ValueError("Binary: expected n or shape, got neither. Pass e.g. Binary(4).")
        size = None if shape is None else _as_size(shape, "Binary")
        if n is None:
            if not size:
                raise ValueError("Binary: expected a shape with at least one dim, got ().")
            n = size[-1]
        n = _check_int(n, "Binary")
        size = torch.Size((n,)) if size is None else size
        if not size or size[-1] != n:
            raise ValueError(
                f"Binary: expected shape[-1] == n == {n}, got shape={_fmt_shape(size)}. Use "
                f"shape=(*batch, {n})."
            )
        dtype = _as_dtype(dtype, "Binary", default=torch.int8)
        if dtype.is_complex:
            raise TypeError(f"Binary: expected a bool, integer or floating dtype, got {dtype}.")
        super().__init__(size, _as_device(device, "Binary"), dtype)
        self.n = n

    def _refresh(self) -> None:
        self.n = self.shape[-1] if self.shape else 1

    @property
    def space(self) -> CategoricalBox:
        """TorchRL's ``CategoricalBox(2)``: the values each entry may take."""
        return CategoricalBox(2)

    def _check_dtype(self, dtype: torch.dtype, where: str) -> None:
        if dtype.is_complex:
            raise TypeError(f"{where}: expected a bool, integer or floating dtype, got {dtype}.")

    def rand(self, shape: ShapeLike = ()) -> torch.Tensor:
        """Samples each entry as a fair coin."""
        size = self._full(shape)
        if self._dtype is torch.bool:
            return torch.randint(0, 2, size, dtype=torch.bool, device=self.device)
        return torch.randint(0, 2, size, dtype=self._dtype, device=self.device)

    def _domain_failure(self, value: torch.Tensor) -> str | None:
        if self._dtype is torch.bool:
            return None
        ok = (value == 0) | (value == 1)
        if bool(ok.all()):
            return None
        at = tuple(int(i) for i in (~ok).nonzero()[0])
        return f"has an entry other than 0 and 1: {value[at].item()} at index {at}"

    def project(self, value: Any) -> torch.Tensor:
        """Thresholds ``value`` at 0.5: entries ``> 0.5`` become 1, the others (and NaN) 0."""
        value = self._project_input(value)
        if value.shape != self.shape:  # leading batch dims: project element by element
            return self._for_value(value).project(value)
        if value.dtype is torch.bool:
            return value.to(self._dtype)
        return (value.double() > 0.5).to(self._dtype)

    def cardinality(self) -> int:
        """The number of distinct vectors, ``2 ** n``."""
        return 2**self.n
