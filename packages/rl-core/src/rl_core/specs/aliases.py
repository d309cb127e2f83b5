"""TorchRL's names for the continuous and discrete kinds of ``Bounded`` and ``Unbounded``.

``BoundedContinuous``/``BoundedDiscrete`` are ``Bounded`` specs whose dtype must be floating /
integer, and ``UnboundedContinuous``/``UnboundedDiscrete`` the same for ``Unbounded``. Each is a
subclass that only fixes the default dtype and checks its kind; it equals the plain spec of
the same shape, dtype and bounds. Unlike TorchRL, ``Bounded(...)`` itself stays a ``Bounded``:
``isinstance(Bounded(0.0, 1.0), BoundedContinuous)`` is ``False``; test ``spec.domain``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from rl_core.specs._base import DeviceLike, ShapeLike, _as_dtype
from rl_core.specs.bounded import Bounded
from rl_core.specs.unbounded import Unbounded


def _check_kind(dtype: torch.dtype, continuous: bool, where: str) -> None:
    if continuous and not dtype.is_floating_point:
        raise TypeError(
            f"{where}: expected a floating dtype (a continuous space), got {dtype}. Use the "
            f"Discrete spec for integers."
        )
    if not continuous and (dtype.is_floating_point or dtype.is_complex or dtype is torch.bool):
        raise TypeError(
            f"{where}: expected an integer dtype (a discrete space), got {dtype}. Use the "
            f"Continuous spec for floats."
        )


class _Kind:
    """Mixin: the dtype kind (continuous or discrete) of an alias, checked on every cast."""

    _continuous: ClassVar[bool]
    _alias_of: ClassVar[type]

    def _check_dtype(self, dtype: torch.dtype, where: str) -> None:
        super()._check_dtype(dtype, where)  # type: ignore[misc]
        _check_kind(dtype, self._continuous, where)


class BoundedContinuous(_Kind, Bounded):
    """A :class:`Bounded` spec of a floating dtype (TorchRL's name for the continuous box).

    Args:
        low, high, shape, device: as for :class:`Bounded`.
        dtype: a floating dtype. Defaults to ``torch.float32``; ``None`` means torch's
            default dtype.

    Raises:
        TypeError: a dtype that is not floating (and the errors of :class:`Bounded`).

    Examples:
        >>> from rl_core.specs import Bounded, BoundedContinuous
        >>> spec = BoundedContinuous(-1.0, 1.0, shape=(2,))
        >>> spec.domain, spec == Bounded(-1.0, 1.0, shape=(2,))
        ('continuous', True)
    """

    _continuous = True
    _alias_of = Bounded

    def __init__(
        self,
        low: Any,
        high: Any,
        shape: ShapeLike | None = None,
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.float32,
    ) -> None:
        dtype = _as_dtype(dtype, "BoundedContinuous", default=torch.get_default_dtype())
        _check_kind(dtype, True, "BoundedContinuous")
        super().__init__(low, high, shape, device, dtype)


class BoundedDiscrete(_Kind, Bounded):
    """A :class:`Bounded` spec of an integer dtype (TorchRL's name for the discrete box).

    Args:
        low, high, shape, device: as for :class:`Bounded`.
        dtype: an integer dtype. Defaults to ``torch.int64`` (also for ``None``).

    Raises:
        TypeError: a dtype that is not an integer (and the errors of :class:`Bounded`).

    Examples:
        >>> from rl_core.specs import BoundedDiscrete
        >>> spec = BoundedDiscrete(1, 6)
        >>> spec.domain, spec.dtype, spec.cardinality()
        ('discrete', torch.int64, 6)
    """

    _continuous = False
    _alias_of = Bounded

    def __init__(
        self,
        low: Any,
        high: Any,
        shape: ShapeLike | None = None,
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.int64,
    ) -> None:
        dtype = _as_dtype(dtype, "BoundedDiscrete", default=torch.int64)
        _check_kind(dtype, False, "BoundedDiscrete")
        super().__init__(low, high, shape, device, dtype)


class UnboundedContinuous(_Kind, Unbounded):
    """An :class:`Unbounded` spec of a floating dtype (TorchRL's name).

    Args:
        shape, device: as for :class:`Unbounded`.
        dtype: a floating dtype. Defaults to ``torch.float32``; ``None`` means torch's
            default dtype.

    Raises:
        TypeError: a dtype that is not floating.

    Examples:
        >>> from rl_core.specs import UnboundedContinuous
        >>> UnboundedContinuous(shape=(3,)).rand().dtype
        torch.float32
    """

    _continuous = True
    _alias_of = Unbounded

    def __init__(
        self,
        shape: ShapeLike = (),
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.float32,
    ) -> None:
        dtype = _as_dtype(dtype, "UnboundedContinuous", default=torch.get_default_dtype())
        _check_kind(dtype, True, "UnboundedContinuous")
        super().__init__(shape, device, dtype)


class UnboundedDiscrete(_Kind, Unbounded):
    """An :class:`Unbounded` spec of an integer dtype (TorchRL's name).

    Args:
        shape, device: as for :class:`Unbounded`.
        dtype: an integer dtype. Defaults to ``torch.int64`` (also for ``None``).

    Raises:
        TypeError: a dtype that is not an integer.

    Examples:
        >>> from rl_core.specs import UnboundedDiscrete
        >>> UnboundedDiscrete(shape=(3,)).rand().dtype
        torch.int64
    """

    _continuous = False
    _alias_of = Unbounded

    def __init__(
        self,
        shape: ShapeLike = (),
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.int64,
    ) -> None:
        dtype = _as_dtype(dtype, "UnboundedDiscrete", default=torch.int64)
        _check_kind(dtype, False, "UnboundedDiscrete")
        super().__init__(shape, device, dtype)


__all__ = ["BoundedContinuous", "BoundedDiscrete", "UnboundedContinuous", "UnboundedDiscrete"]
