"""NonTensor: entries that hold python objects (strings, dicts...) rather than tensors."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack, is_non_tensor

from rl_core.specs._base import DeviceLike, ShapeLike, _as_device, _as_size, _fmt_shape
from rl_core.specs._leaf import _LeafSpec, _same_device


def _ends_with(batch_size: torch.Size, shape: torch.Size) -> bool:
    """Whether ``batch_size`` is ``shape`` with any number of leading (batch) dims."""
    extra = len(batch_size) - len(shape)
    return extra >= 0 and batch_size[extra:] == shape


class NonTensor(_LeafSpec):
    """An entry holding python objects, stored as tensordict ``NonTensorData``.

    :meth:`rand`, :meth:`zero` and :meth:`one` all return ``NonTensorData`` holding
    ``example_data`` with batch size ``(*shape, *self.shape)``. :meth:`is_in` checks the
    structure only (a ``NonTensorData``/``NonTensorStack`` of the right batch size and
    device), never the payload. ``example_data`` does not take part in ``==``.

    Args:
        shape: the batch size of the values. Defaults to ``()``.
        device: the device of the values, or ``None``. Defaults to ``None``.
        dtype: kept for signature compatibility; ``None`` (non-tensor data has no dtype).
        example_data: the payload returned by :meth:`rand` and :meth:`zero`.

    Raises:
        TypeError: a bad ``shape`` or ``device``, or a ``dtype`` other than ``None``.

    Examples:
        >>> from rl_core.specs import NonTensor
        >>> spec = NonTensor(example_data="hello")
        >>> spec
        NonTensor(shape=(), example_data='hello')
        >>> value = spec.rand()
        >>> value.data, spec.is_in(value)
        ('hello', True)
        >>> spec.encode("bye").data
        'bye'
    """

    _event_ndim = 0

    def __init__(
        self,
        shape: ShapeLike = (),
        device: DeviceLike = None,
        dtype: torch.dtype | None = None,
        example_data: Any = None,
    ) -> None:
        if dtype is not None:
            raise TypeError(
                f"NonTensor: non-tensor data has no dtype; expected dtype=None, got {dtype!r}."
            )
        super().__init__(_as_size(shape, "NonTensor"), _as_device(device, "NonTensor"), None)  # type: ignore[arg-type]
        self.example_data = example_data

    @property
    def dtype(self) -> None:
        """Always ``None``."""
        return None

    def to(self, device: DeviceLike | torch.dtype) -> NonTensor:
        """Returns the spec on a device; a dtype leaves it as it is (python objects have no
        dtype), so that casting a Composite casts its tensor entries only."""
        if isinstance(device, torch.dtype):
            return self
        return super().to(device)

    def _wrap(self, data: Any, shape: ShapeLike = ()) -> NonTensorData:
        return NonTensorData(data=data, batch_size=self._full(shape), device=self.device)

    def rand(self, shape: ShapeLike = ()) -> NonTensorData:
        """``example_data`` as ``NonTensorData`` of batch size ``(*shape, *self.shape)``."""
        return self._wrap(self.example_data, shape)

    def zero(self, shape: ShapeLike = ()) -> NonTensorData:
        """Same as :meth:`rand`: non-tensor data has no zero."""
        return self._wrap(self.example_data, shape)

    def one(self, shape: ShapeLike = ()) -> NonTensorData:
        """Same as :meth:`rand`: non-tensor data has no one."""
        return self._wrap(self.example_data, shape)

    def _failure(
        self, value: Any, path: tuple[str, ...] = ()
    ) -> tuple[str, tuple[str, ...], str] | None:
        reason = None
        if not is_non_tensor(value):
            reason = f"is a {type(value).__name__}, expected NonTensorData or NonTensorStack"
        elif not _ends_with(value.batch_size, self.shape):
            reason = (
                f"has batch size {_fmt_shape(value.batch_size)}, expected {_fmt_shape(self.shape)}"
            )
        elif (
            self.device is not None
            and value.device is not None
            and not _same_device(value.device, self.device)
        ):
            reason = f"is on device {value.device}, expected {self.device}"
        return None if reason is None else ("NonTensor", path, reason)

    def project(self, value: Any) -> NonTensorData | NonTensorStack:
        """Returns non-tensor data unchanged; wraps any other object in ``NonTensorData``.

        Raises:
            ValueError: non-tensor data of the wrong batch size.
        """
        if is_non_tensor(value):
            if not _ends_with(value.batch_size, self.shape):
                raise ValueError(
                    f"NonTensor.project: expected batch size {_fmt_shape(self.shape)} (leading "
                    f"batch dims allowed), got "
                    f"{_fmt_shape(value.batch_size)}."
                )
            return value
        return self._wrap(value)

    def encode(self, value: Any, *, ignore_device: bool = False) -> NonTensorData | NonTensorStack:
        """Wraps a python object in ``NonTensorData`` of batch size ``self.shape``.

        Non-tensor data passes through after a batch-size check.

        Keyword Args:
            ignore_device: build the data without a device. Defaults to ``False``.

        Raises:
            ValueError: non-tensor data of the wrong batch size.
        """
        if is_non_tensor(value):
            if value.batch_size != self.shape:
                raise ValueError(
                    f"NonTensor.encode: expected batch size {_fmt_shape(self.shape)}, got "
                    f"{_fmt_shape(value.batch_size)}. Build the spec with "
                    f"shape={_fmt_shape(value.batch_size)}."
                )
            return value
        device = None if ignore_device else self.device
        return NonTensorData(data=value, batch_size=self.shape, device=device)

    def to_numpy(self, value: Any, *, safe: bool = False) -> Any:
        """Returns the payload: the shared object of ``NonTensorData``, or a nested list
        for ``NonTensorStack``.

        Keyword Args:
            safe: check the value with :meth:`assert_is_in` first. Defaults to ``False``.

        Raises:
            TypeError: ``value`` is not non-tensor data.
        """
        if safe:
            self.assert_is_in(value)
        if isinstance(value, NonTensorData):
            return value.data
        if isinstance(value, NonTensorStack):
            return value.tolist()
        raise TypeError(
            f"NonTensor.to_numpy: expected NonTensorData or NonTensorStack, got "
            f"{type(value).__name__}."
        )

    def _repr_extra(self) -> list[str]:
        return [f"example_data={self.example_data!r}"]

    def __repr__(self) -> str:
        parts = [f"shape={_fmt_shape(self.shape)}"]
        if self.device is not None:
            parts.append(f"device={self.device}")
        parts.extend(self._repr_extra())
        return f"NonTensor({', '.join(parts)})"
