"""The shared machinery of leaf (single-tensor) specs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, NoReturn, Self

import numpy as np
import torch

from rl_core.specs._base import (
    DeviceLike,
    ShapeLike,
    TensorSpec,
    _as_device,
    _dtype_name,
    _expand_to,
    _extend_index,
    _fmt_shape,
    _index_shape,
    _norm_dim,
    _prepend,
    _reshape_to,
    _unpack_shape,
)


def _same_device(got: torch.device, expected: torch.device) -> bool:
    """Whether a tensor on ``got`` satisfies a spec pinned to ``expected``.

    ``cuda`` without an index matches any CUDA device.
    """
    if got == expected:
        return True
    return got.type == expected.type and expected.index is None


def _tensor_equal(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b.to(a.device)))


def _fmt_values(t: torch.Tensor) -> str:
    """Short text for a bound or mask: a scalar if uniform, else a summary."""
    if t.numel() == 0:
        return "[]"
    flat = t.reshape(-1)
    first = flat[0]
    if bool((flat == first).all()):
        return str(first.item())
    if t.numel() <= 6:
        return str(flat.tolist())
    return f"Tensor(shape={_fmt_shape(t.shape)}, min={flat.min().item()}, max={flat.max().item()})"


class _LeafSpec(TensorSpec):
    """A spec of one tensor: shape, dtype, device and a domain.

    Subclasses list in ``_params`` the tensor attributes whose leading dims are the spec's
    batch dims (bounds, masks): the shape operations and ``to``/``clone`` are derived from
    that list. ``_event_ndim`` trailing dims (the one-hot dim) are never indexed or reshaped.
    """

    _params: ClassVar[tuple[str, ...]] = ()
    _attrs: ClassVar[tuple[str, ...]] = ()
    _event_ndim: ClassVar[int] = 0

    def __init__(self, shape: torch.Size, device: torch.device | None, dtype: torch.dtype):
        self.shape = shape
        self.device = device
        self._dtype = dtype

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the values."""
        return self._dtype

    # -- construction helpers ---------------------------------------------------------------

    def _refresh(self) -> None:
        """Recomputes caches derived from the params; called after every rebuild."""

    def _replace(self, **changes: Any) -> Self:
        """A shallow copy with ``changes`` applied, skipping constructor validation."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        new._refresh()
        return new

    def _map_params(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> dict[str, Any]:
        out = {}
        for name in self._params:
            p = getattr(self, name)
            out[name] = None if p is None else fn(p)
        return out

    @property
    def _batch_ndim(self) -> int:
        return len(self.shape) - self._event_ndim

    def _full(self, shape: ShapeLike, method: str = "rand") -> torch.Size:
        """``(*shape, *self.shape)``; the hot path of ``rand``/``zero``."""
        if type(shape) is tuple and not shape:  # the default, without building a message
            return self.shape
        return _prepend(shape, self.shape, f"{type(self).__name__}.{method}")

    # -- values -----------------------------------------------------------------------------

    def zero(self, shape: ShapeLike = ()) -> torch.Tensor:
        """Returns an all-zeros tensor of shape ``(*shape, *self.shape)``.

        The zero tensor is meant for allocation; it is in the space only when 0 is.

        Args:
            shape: leading dims to prepend. Defaults to ``()``.

        Returns:
            A tensor of the spec's dtype on the spec's device.
        """
        return torch.zeros(self._full(shape, "zero"), dtype=self._dtype, device=self.device)

    def one(self, shape: ShapeLike = ()) -> torch.Tensor:
        """Returns an all-ones tensor of shape ``(*shape, *self.shape)``.

        Args:
            shape: leading dims to prepend. Defaults to ``()``.

        Returns:
            A tensor of the spec's dtype on the spec's device.
        """
        return torch.ones(self._full(shape, "one"), dtype=self._dtype, device=self.device)

    def _basic_failure(self, value: Any) -> str | None:
        if not isinstance(value, torch.Tensor):
            return f"is a {type(value).__name__}, expected a torch.Tensor"
        if value.shape != self.shape:
            return f"has shape {_fmt_shape(value.shape)}, expected {_fmt_shape(self.shape)}"
        if value.dtype != self._dtype:
            return f"has dtype {value.dtype}, expected {self._dtype}"
        if self.device is not None and not _same_device(value.device, self.device):
            return f"is on device {value.device}, expected {self.device}"
        return None

    def _domain_failure(self, value: torch.Tensor) -> str | None:
        """The reason ``value`` (of the right shape/dtype/device) is outside the domain."""
        return None

    def _for_value(self, value: torch.Tensor) -> Self:
        """The spec of a value with extra leading (batch) dims: ``self`` expanded to its shape.

        ``self`` when ``value`` has the spec's shape or a shape that does not end with it, so
        that the checks report the shape mismatch.
        """
        shape, own = value.shape, self.shape
        extra = len(shape) - len(own)
        if extra <= 0 or shape[extra:] != own:
            return self
        return self.expand(shape)

    def _failure(
        self, value: Any, path: tuple[str, ...] = ()
    ) -> tuple[str, tuple[str, ...], str] | None:
        if isinstance(value, torch.Tensor) and value.shape != self.shape:
            spec = self._for_value(value)
            if spec is not self:  # leading batch dims: checked element by element
                return spec._failure(value, path)
        reason = self._basic_failure(value)
        if reason is None:
            reason = self._domain_failure(value)
        return None if reason is None else (type(self).__name__, path, reason)

    def _project_input(self, value: Any) -> torch.Tensor:
        where = f"{type(self).__name__}.project"
        if not isinstance(value, torch.Tensor):
            try:
                value = torch.as_tensor(value)
            except (TypeError, ValueError, RuntimeError) as err:
                raise TypeError(
                    f"{where}: expected a tensor or array-like value, got "
                    f"{type(value).__name__} ({err})."
                ) from None
        if value.shape != self.shape and self._for_value(value) is self:
            raise ValueError(
                f"{where}: expected shape {_fmt_shape(self.shape)}, got "
                f"{_fmt_shape(value.shape)}. project maps values (leading batch dims "
                f"allowed), it does not reshape them."
            )
        if self.device is not None and not _same_device(value.device, self.device):
            value = value.to(self.device)
        return value

    def encode(self, value: Any, *, ignore_device: bool = False) -> torch.Tensor:
        """Converts a numpy array, python value or tensor to a tensor of the spec.

        Only the dtype, device and shape are handled: the domain is not checked (use
        :meth:`assert_is_in` for that), which keeps this cheap enough for every env step.

        Args:
            value: a numpy array, a python scalar or (nested) list, or a tensor.

        Keyword Args:
            ignore_device: keep the value's device (numpy goes to the CPU) instead of moving
                it to the spec's device. Defaults to ``False``.

        Returns:
            A tensor of the spec's dtype and shape.

        Raises:
            ValueError: the value's shape is not ``self.shape``.
            TypeError: the value cannot be converted to a tensor.
        """
        out = self._as_tensor(value, self._dtype, None if ignore_device else self.device)
        if out.shape != self.shape:
            self._raise_encode_shape(out.shape)
        return out

    def _as_tensor(
        self, value: Any, dtype: torch.dtype | None, device: torch.device | None
    ) -> torch.Tensor:
        try:
            return torch.as_tensor(value, dtype=dtype, device=device)
        except (TypeError, ValueError, RuntimeError) as err:
            if isinstance(value, np.ndarray):  # e.g. negative strides from a flipped image
                return torch.as_tensor(np.ascontiguousarray(value), dtype=dtype, device=device)
            raise TypeError(
                f"{type(self).__name__}.encode: cannot convert a {type(value).__name__} to "
                f"a tensor of dtype {dtype or self._dtype} ({err})."
            ) from None

    def _raise_encode_shape(self, got: torch.Size, hint: str = "") -> NoReturn:
        raise ValueError(
            f"{type(self).__name__}.encode: expected shape {_fmt_shape(self.shape)}{hint}, got "
            f"{_fmt_shape(got)}. Reshape the value or build the spec with "
            f"shape={_fmt_shape(got)}."
        )

    def to_numpy(self, value: torch.Tensor, *, safe: bool = False) -> np.ndarray:
        """Converts a tensor of the spec to a numpy array (on the CPU).

        Args:
            value: a tensor of the spec.

        Keyword Args:
            safe: check the value with :meth:`assert_is_in` first. Defaults to ``False``.

        Returns:
            A numpy array (bfloat16 becomes float32, which numpy lacks).

        Raises:
            TypeError: ``value`` is not a tensor.
            ValueError: ``safe`` is set and the value is outside the space.
        """
        if safe:
            self.assert_is_in(value)
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"{type(self).__name__}.to_numpy: expected a torch.Tensor, got "
                f"{type(value).__name__}."
            )
        value = value.detach()
        if value.dtype is torch.bfloat16:
            value = value.float()
        return value.cpu().numpy()

    # -- device and copies ------------------------------------------------------------------

    def to(self, device: DeviceLike | torch.dtype) -> Self:
        """Returns the spec on a device, or cast to a dtype (``self`` if nothing changes).

        Args:
            device: the target device, or a ``torch.dtype`` to cast the values (and bounds)
                to, as ``Tensor.to`` does (TorchRL's ``spec.to(torch.float64)``).

        Returns:
            A spec whose values and bounds live on that device, or have that dtype.

        Raises:
            TypeError: the spec cannot hold values of the dtype (e.g. a float Categorical).
            ValueError: a bound cannot be represented in the dtype.
        """
        if isinstance(device, torch.dtype):
            if device == self._dtype:
                return self
            where = f"{type(self).__name__}.to"
            self._check_dtype(device, where)
            return self._replace(_dtype=device, **self._cast_params(device, where))
        dev = _as_device(device, f"{type(self).__name__}.to")
        if dev == self.device:
            return self
        return self._replace(device=dev, **self._map_params(lambda p: p.to(dev)))

    def _check_dtype(self, dtype: torch.dtype, where: str) -> None:
        """Raises TypeError if values of the spec cannot have ``dtype``."""

    def _cast_params(self, dtype: torch.dtype, where: str) -> dict[str, Any]:
        """The params that hold values of the spec (bounds), cast to ``dtype``."""
        return {}

    def clone(self) -> Self:
        """Returns a copy of the spec that shares no tensor with it."""
        return self._replace(**self._map_params(torch.clone))

    # -- shape operations -------------------------------------------------------------------

    def _event_hint(self) -> str:
        if not self._event_ndim:
            return ""
        return (
            f" {type(self).__name__} keeps its last dim (the event dim of size "
            f"{self.shape[-1]}) whole; only the dims before it can be changed or indexed."
        )

    def expand(self, *shape: Any) -> Self:
        """Returns the spec expanded to a new full shape, like ``Tensor.expand``.

        Args:
            *shape: the new full shape (ints, or one tuple); trailing dims must equal the
                current ones, be ``-1`` or expand a singleton.

        Returns:
            A spec of the new shape.

        Raises:
            ValueError: the shape is not an expansion of ``self.shape``.
        """
        where = f"{type(self).__name__}.expand"
        new = _expand_to(self.shape, _unpack_shape(shape), where)
        ev = self._event_ndim
        if ev and new[-ev:] != self.shape[-ev:]:
            raise ValueError(
                f"{where}: cannot change the event dims {_fmt_shape(self.shape[-ev:])} to "
                f"{_fmt_shape(new[-ev:])}.{self._event_hint()}"
            )
        nb, new_nb = self._batch_ndim, len(new) - ev
        params = self._map_params(lambda p: p.expand((*new[:new_nb], *p.shape[nb:])))
        return self._replace(shape=new, **params)

    def squeeze(self, dim: int | tuple[int, ...] | None = None) -> Self:
        """Returns the spec without singleton batch dims (all of them, or those in ``dim``).

        Args:
            dim: the dim(s) to squeeze; non-singleton dims are left as they are, like
                ``Tensor.squeeze``. Defaults to all singleton batch dims.

        Returns:
            The squeezed spec.

        Raises:
            ValueError: ``dim`` names an event dim.
        """
        where = f"{type(self).__name__}.squeeze"
        nb = self._batch_ndim
        if dim is None:
            dims = tuple(i for i in range(nb) if self.shape[i] == 1)
        else:
            given = dim if isinstance(dim, tuple | list) else (dim,)
            dims = tuple(sorted({_norm_dim(d, self.ndim, where) for d in given}))
            if dims and dims[-1] >= nb:
                raise ValueError(
                    f"{where}: dim {dims[-1]} is an event dim of shape "
                    f"{_fmt_shape(self.shape)}.{self._event_hint()}"
                )
            dims = tuple(d for d in dims if self.shape[d] == 1)
        if not dims:
            return self._replace()
        new = torch.Size(s for i, s in enumerate(self.shape) if i not in dims)
        return self._replace(shape=new, **self._map_params(lambda p: p.squeeze(dims)))

    def unsqueeze(self, dim: int) -> Self:
        """Returns the spec with a singleton dim inserted at ``dim``, like ``Tensor.unsqueeze``.

        Args:
            dim: the position of the new dim, in ``[-ndim - 1, ndim]``.

        Returns:
            The spec with one more dim.

        Raises:
            ValueError: the new dim would land inside or after the event dims.
        """
        where = f"{type(self).__name__}.unsqueeze"
        pos = _norm_dim(dim, self.ndim + 1, where)
        if pos > self._batch_ndim:
            raise ValueError(
                f"{where}: dim {dim} would insert a dim after the batch dims of shape "
                f"{_fmt_shape(self.shape)}.{self._event_hint()}"
            )
        new = torch.Size((*self.shape[:pos], 1, *self.shape[pos:]))
        return self._replace(shape=new, **self._map_params(lambda p: p.unsqueeze(pos)))

    def reshape(self, *shape: Any) -> Self:
        """Returns the spec reshaped to a new full shape, like ``Tensor.reshape``.

        Args:
            *shape: the new full shape (ints, or one tuple; one ``-1`` allowed).

        Returns:
            The reshaped spec.

        Raises:
            ValueError: the number of elements differs, or the event dims would change.
        """
        where = f"{type(self).__name__}.reshape"
        new = _reshape_to(self.shape, _unpack_shape(shape), where)
        ev = self._event_ndim
        if ev and (len(new) < ev or new[-ev:] != self.shape[-ev:]):
            raise ValueError(
                f"{where}: cannot reshape {_fmt_shape(self.shape)} to {_fmt_shape(new)}: the "
                f"event dims {_fmt_shape(self.shape[-ev:])} must stay last.{self._event_hint()}"
            )
        nb, new_nb = self._batch_ndim, len(new) - ev
        params = self._map_params(lambda p: p.reshape((*new[:new_nb], *p.shape[nb:])))
        return self._replace(shape=new, **params)

    def __getitem__(self, index: Any) -> Self:
        """Indexes the batch dims, like indexing a tensor of shape ``self.shape``.

        Args:
            index: an int, slice, ``None``, ``Ellipsis``, tensor, or a tuple of them.

        Returns:
            The spec of the indexed values.

        Raises:
            IndexError: the index does not fit the batch dims (or reaches an event dim).
        """
        nb = self._batch_ndim
        new_batch = _index_shape(
            self.shape[:nb], index, f"{type(self).__name__}.__getitem__", self._event_hint()
        )
        params = self._map_params(lambda p: p[_extend_index(index, p.ndim - nb)])
        return self._replace(shape=torch.Size((*new_batch, *self.shape[nb:])), **params)

    # -- comparison and display -------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        # A TorchRL-named alias (e.g. BoundedContinuous) equals the plain spec it refines.
        if getattr(type(other), "_alias_of", type(other)) is not getattr(
            type(self), "_alias_of", type(self)
        ):
            return False
        if (
            self.shape != other.shape
            or self._dtype != other._dtype
            or self.device != other.device
            or any(getattr(self, a) != getattr(other, a) for a in self._attrs)
        ):
            return False
        return all(_tensor_equal(getattr(self, p), getattr(other, p)) for p in self._params)

    def _repr_extra(self) -> list[str]:
        return [f"{a}={getattr(self, a)}" for a in self._attrs]

    def __repr__(self) -> str:
        parts = [f"shape={_fmt_shape(self.shape)}", f"dtype={_dtype_name(self._dtype)}"]
        if self.device is not None:
            parts.append(f"device={self.device}")
        parts.extend(self._repr_extra())
        return f"{type(self).__name__}({', '.join(parts)})"
