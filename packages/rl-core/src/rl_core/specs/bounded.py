"""Bounded: values in an elementwise box ``[low, high]``."""

from __future__ import annotations

from typing import Any

import torch

from rl_core.specs._base import (
    DeviceLike,
    ShapeLike,
    _as_device,
    _as_dtype,
    _as_size,
    _fmt_shape,
)
from rl_core.specs._box import ContinuousBox
from rl_core.specs._leaf import _fmt_values, _LeafSpec


def _bound(
    value: Any, name: str, dtype: torch.dtype, device: torch.device | None, where: str = "Bounded"
) -> torch.Tensor:
    """Converts ``low`` or ``high`` to a tensor of ``dtype``, checking it is representable."""
    try:
        t = torch.as_tensor(value, device=device)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(
            f"{where}: expected {name} to be a number, a sequence or a tensor, got "
            f"{type(value).__name__} ({err})."
        ) from None
    if t.dtype is torch.bool or t.is_complex():
        raise TypeError(f"{where}: expected {name} to be real numbers, got dtype {t.dtype}.")
    if t.is_floating_point() and bool(t.isnan().any()):
        raise ValueError(f"{where}: {name} contains NaN; bounds must be numbers.")
    if not dtype.is_floating_point:
        if t.is_floating_point():
            if not bool(t.isfinite().all()):
                raise ValueError(
                    f"{where}: {name} is infinite, which an integer dtype ({dtype}) cannot "
                    f"hold. Use a floating dtype or finite bounds."
                )
            if not bool((t == t.round()).all()):
                raise ValueError(
                    f"{where}: {name}={_fmt_values(t)} is not integral, but dtype is {dtype}. "
                    f"Round the bounds or use a floating dtype."
                )
        info = torch.iinfo(dtype)
        if t.numel() and (t.min().item() < info.min or t.max().item() > info.max):
            raise ValueError(
                f"{where}: {name}={_fmt_values(t)} does not fit dtype {dtype} "
                f"([{info.min}, {info.max}])."
            )
    return t.to(dtype).clone()


def _check_bounded_dtype(dtype: torch.dtype, where: str) -> None:
    if dtype is torch.bool or dtype.is_complex:
        raise TypeError(
            f"{where}: dtype {dtype} is not supported. Use Binary or Categorical for "
            f"booleans, or a real dtype such as torch.float32."
        )


class Bounded(_LeafSpec):
    """Values inside an elementwise box ``[low, high]`` (both ends included).

    A floating dtype gives a continuous box; an integer dtype a discrete one, whose
    :meth:`rand` draws integers uniformly in ``[low, high]``. Float bounds may be infinite
    (a half-open box, e.g. ``[0, inf)``): :meth:`rand` then draws ``low + |N(0, 1)|`` (or
    ``high - |N(0, 1)|``, or ``N(0, 1)``) on those elements.

    Args:
        low: lower bound: a number, a sequence or a tensor broadcastable to ``shape``.
        high: upper bound, likewise; ``low <= high`` elementwise.
        shape: the full shape of a value, batch dims included. Defaults to the broadcast
            shape of ``low`` and ``high``.
        device: the device of the values, or ``None`` for none pinned. Defaults to ``None``.
        dtype: the dtype of the values (not bool: use ``Binary`` or ``Categorical``).
            Defaults to ``torch.float32``; ``None`` means torch's default dtype (as TorchRL).

    Attributes:
        low: the lower bound, a tensor of shape ``shape`` and dtype ``dtype``.
        high: the upper bound, likewise.

    Raises:
        TypeError: an argument has the wrong type, or dtype is bool.
        ValueError: the bounds do not broadcast to ``shape``, contain NaN, are not integral
            for an integer dtype, or ``low > high`` somewhere.

    Examples:
        >>> import torch
        >>> from rl_core.specs import Bounded
        >>> spec = Bounded(-1.0, 1.0, shape=(3,))
        >>> spec
        Bounded(shape=(3,), dtype=float32, low=-1.0, high=1.0)
        >>> spec.is_in(spec.rand())
        True
        >>> spec.project(torch.tensor([-3.0, 0.5, 2.0]))
        tensor([-1.0000,  0.5000,  1.0000])
        >>> dice = Bounded(1, 6, dtype=torch.int64)
        >>> dice.cardinality()
        6
    """

    _params = ("low", "high")

    def __init__(
        self,
        low: Any,
        high: Any,
        shape: ShapeLike | None = None,
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.float32,
    ) -> None:
        dtype = _as_dtype(dtype, "Bounded", default=torch.get_default_dtype())
        _check_bounded_dtype(dtype, "Bounded")
        device = _as_device(device, "Bounded")
        low_t = _bound(low, "low", dtype, device)
        high_t = _bound(high, "high", dtype, device)
        try:
            bshape = torch.broadcast_shapes(low_t.shape, high_t.shape)
        except RuntimeError:
            raise ValueError(
                f"Bounded: low of shape {_fmt_shape(low_t.shape)} and high of shape "
                f"{_fmt_shape(high_t.shape)} do not broadcast together."
            ) from None
        if shape is None:
            size = bshape
        else:
            size = _as_size(shape, "Bounded")
            try:
                ok = torch.broadcast_shapes(bshape, size) == size
            except RuntimeError:
                ok = False
            if not ok:
                raise ValueError(
                    f"Bounded: low/high of shape {_fmt_shape(bshape)} do not broadcast to "
                    f"shape={_fmt_shape(size)}. Give bounds of shape {_fmt_shape(size)} (or "
                    f"scalars), or drop shape to use theirs."
                )
        low_t, high_t = low_t.expand(size), high_t.expand(size)
        bad = low_t > high_t
        if bool(bad.any()):
            at = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(
                f"Bounded: expected low <= high, got low={low_t[at].item()} > "
                f"high={high_t[at].item()} at index {at}. Swap or fix the bounds."
            )
        super().__init__(size, device, dtype)
        self.low = low_t
        self.high = high_t
        self._refresh()

    @property
    def space(self) -> ContinuousBox:
        """``low`` and ``high`` as TorchRL's ``ContinuousBox`` (the spec's own tensors)."""
        return ContinuousBox(self.low, self.high)

    def _check_dtype(self, dtype: torch.dtype, where: str) -> None:
        _check_bounded_dtype(dtype, where)

    def _cast_params(self, dtype: torch.dtype, where: str) -> dict[str, Any]:
        # Same checks as the constructor: an integer dtype needs finite, integral bounds.
        return {
            "low": _bound(self.low, "low", dtype, self.device, where),
            "high": _bound(self.high, "high", dtype, self.device, where),
        }

    def _refresh(self) -> None:
        low, high = self.low, self.high
        self._discrete = not self._dtype.is_floating_point
        self._finite = self._discrete or bool(low.isfinite().all() & high.isfinite().all())
        self._span: torch.Tensor | None = None
        if not self._discrete and self._finite:
            span = high - low
            if bool(span.isfinite().all()):  # no overflow, e.g. for [-max, max] bounds
                self._span = span
        self._scalar: tuple[int, int] | None = None
        if self._discrete and low.numel():
            lo, hi = low.reshape(-1)[0], high.reshape(-1)[0]
            if bool((low == lo).all() & (high == hi).all()):
                self._scalar = (int(lo), int(hi))

    @property
    def domain(self) -> str:
        """``"continuous"`` for floating dtypes, else ``"discrete"``."""
        return "discrete" if self._discrete else "continuous"

    def rand(self, shape: ShapeLike = ()) -> torch.Tensor:
        """Samples uniformly inside ``[low, high]``."""
        size = self._full(shape)
        low, high, dev = self.low, self.high, self.device
        if self._discrete:
            scalar = self._scalar
            if scalar is not None and scalar[1] < torch.iinfo(torch.int64).max:
                return torch.randint(scalar[0], scalar[1] + 1, size, dtype=self._dtype, device=dev)
            u = torch.rand(size, dtype=torch.float64, device=dev)
            lo = low.double()
            out = lo + torch.floor(u * (high.double() - lo + 1))
            return torch.minimum(out, high.double()).to(self._dtype)
        u = torch.rand(size, dtype=self._dtype, device=dev)
        span = self._span
        if span is not None:  # the fast path: low + u * (high - low), capped at high
            return torch.addcmul(low, u, span).clamp_(max=high)
        out = low * (1 - u) + high * u if self._finite else self._rand_infinite(u)
        return torch.clamp(out, low, high)

    def _rand_infinite(self, u: torch.Tensor) -> torch.Tensor:
        low, high = self.low, self.high
        lo_ok, hi_ok = low.isfinite(), high.isfinite()
        lo = torch.where(lo_ok, low, 0)
        hi = torch.where(hi_ok, high, 0)
        normal = torch.randn_like(u)
        out = torch.where(lo_ok & hi_ok, lo * (1 - u) + hi * u, normal)
        out = torch.where(lo_ok & ~hi_ok, lo + normal.abs(), out)
        return torch.where(~lo_ok & hi_ok, hi - normal.abs(), out)

    def _domain_failure(self, value: torch.Tensor) -> str | None:
        low, high = self.low, self.high
        if bool(((value >= low) & (value <= high)).all()):
            return None
        bad = ~((value >= low) & (value <= high))
        at = tuple(int(i) for i in bad.nonzero()[0])
        v = value[at].item()
        return (
            f"is outside the bounds: {v} at index {at} is not in "
            f"[{low[at].item()}, {high[at].item()}]"
        )

    def project(self, value: Any) -> torch.Tensor:
        """Clamps ``value`` (any real dtype) into ``[low, high]``.

        Integer specs round first; NaN maps to ``low``.
        """
        value = self._project_input(value)
        if value.shape != self.shape:  # leading batch dims: project element by element
            return self._for_value(value).project(value)
        low, high = self.low.to(value.device), self.high.to(value.device)
        if self._discrete:
            v = value.double()
            if value.is_floating_point():
                v = torch.where(v.isnan(), low.double(), v.round())
            return v.clamp(low.double(), high.double()).to(self._dtype)
        v = value.to(self._dtype)
        return torch.where(v.isnan(), low, v.clamp(low, high))

    def cardinality(self) -> int:
        """The number of values one element can take: ``high - low + 1`` (integer dtypes).

        Returns:
            The count, as a python int.

        Raises:
            ValueError: the spec is continuous, or its bounds differ across elements.
        """
        if not self._discrete:
            raise ValueError(
                f"Bounded.cardinality: a {self._dtype} box is continuous; only integer-dtype "
                f"Bounded specs have a cardinality."
            )
        if self._scalar is None:
            raise ValueError(
                "Bounded.cardinality: the bounds differ across elements "
                f"(low={_fmt_values(self.low)}, high={_fmt_values(self.high)}), so one element "
                "has no single cardinality. Index the spec to one element first."
            )
        return self._scalar[1] - self._scalar[0] + 1

    def _repr_extra(self) -> list[str]:
        return [f"low={_fmt_values(self.low)}", f"high={_fmt_values(self.high)}"]
