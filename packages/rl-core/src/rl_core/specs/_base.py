"""The :class:`TensorSpec` base and the helpers every spec shares."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np
import torch

ShapeLike: TypeAlias = int | Sequence[int] | torch.Size
DeviceLike: TypeAlias = torch.device | str | int | None


def _fmt_shape(shape: Sequence[int]) -> str:
    """Formats a shape as a plain tuple: ``(4, 3)``, ``(3,)``, ``()``."""
    return str(tuple(shape))


def _dtype_name(dtype: torch.dtype | None) -> str:
    return str(dtype).removeprefix("torch.")


def _as_size(shape: Any, where: str, arg: str = "shape") -> torch.Size:
    """Validates a shape argument and returns it as a ``torch.Size``.

    Args:
        shape: an int, a sequence of ints or a ``torch.Size``.
        where: the ``Class.method`` named in errors.
        arg: the argument name named in errors.

    Raises:
        TypeError: ``shape`` is not an int or a sequence of ints.
        ValueError: a dimension is negative.
    """
    if isinstance(shape, torch.Size):
        dims = tuple(shape)
    elif isinstance(shape, int) and not isinstance(shape, bool):
        dims = (shape,)
    elif isinstance(shape, Sequence) and not isinstance(shape, str):
        dims = tuple(shape)
        for d in dims:
            if isinstance(d, bool) or not isinstance(d, int | np.integer):
                raise TypeError(
                    f"{where}: expected {arg} to be a sequence of ints, got an element "
                    f"{d!r} of type {type(d).__name__}. Pass e.g. {arg}=(4, 3)."
                )
        dims = tuple(int(d) for d in dims)
    else:
        raise TypeError(
            f"{where}: expected {arg} to be an int, a tuple of ints or a torch.Size, "
            f"got {type(shape).__name__}. Pass e.g. {arg}=(4, 3)."
        )
    if any(d < 0 for d in dims):
        raise ValueError(
            f"{where}: expected non-negative dimensions in {arg}, got {_fmt_shape(dims)}."
        )
    return torch.Size(dims)


def _as_device(device: DeviceLike, where: str) -> torch.device | None:
    """Returns ``device`` as a ``torch.device`` (``None`` stays ``None``)."""
    if device is None or isinstance(device, torch.device):
        return device
    if isinstance(device, str | int) and not isinstance(device, bool):
        try:
            return torch.device(device)
        except RuntimeError as err:
            raise ValueError(
                f"{where}: expected a device such as 'cpu' or 'cuda:0', got {device!r} ({err})."
            ) from None
    raise TypeError(
        f"{where}: expected device to be a torch.device, a string, an int or None, "
        f"got {type(device).__name__}."
    )


def _as_dtype(dtype: Any, where: str, default: torch.dtype | None = None) -> torch.dtype:
    """Validates a dtype argument (a ``torch.dtype`` or its name, e.g. ``"float32"``).

    ``None`` means ``default`` where one is given (an explicit ``dtype=None`` asks for the
    default, as in TorchRL).
    """
    if dtype is None and default is not None:
        return default
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str):
        found = getattr(torch, dtype.removeprefix("torch."), None)
        if isinstance(found, torch.dtype):
            return found
    raise TypeError(
        f"{where}: expected dtype to be a torch.dtype such as torch.float32, got {dtype!r}."
    )


def _unpack_shape(shape: tuple[Any, ...]) -> Any:
    """Lets ``f(4, 3)`` and ``f((4, 3))`` mean the same for ``expand`` and ``reshape``."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        return shape[0]
    return shape


def _expand_to(old: torch.Size, new: Any, where: str) -> torch.Size:
    """Resolves the target of an ``expand`` with ``Tensor.expand`` rules.

    ``new`` must have at least as many dims as ``old``; its trailing dims must equal the old
    ones, be ``-1`` (keep) or expand a singleton.
    """
    dims = list(new) if isinstance(new, Sequence) else [new]
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int | np.integer):
            raise TypeError(f"{where}: expected ints in the new shape, got {d!r}.")
    if len(dims) < len(old):
        raise ValueError(
            f"{where}: the new shape {_fmt_shape(dims)} has fewer dims than the current shape "
            f"{_fmt_shape(old)}. Pass the full new shape, e.g. (n, *spec.shape)."
        )
    lead = len(dims) - len(old)
    out = []
    for i, d in enumerate(dims):
        d = int(d)
        if i < lead:
            if d < 0:
                raise ValueError(
                    f"{where}: new leading dims must be non-negative, got {_fmt_shape(dims)}."
                )
            out.append(d)
            continue
        o = old[i - lead]
        if d == -1 or d == o:
            out.append(o)
        elif o == 1 and d >= 0:
            out.append(d)
        else:
            raise ValueError(
                f"{where}: cannot expand shape {_fmt_shape(old)} to {_fmt_shape(dims)}: "
                f"dim {i} is {o} and can only become {o} (or -1), since only singleton dims "
                f"expand."
            )
    return torch.Size(out)


def _reshape_to(old: torch.Size, new: Any, where: str) -> torch.Size:
    """Resolves the target of a ``reshape`` (one ``-1`` allowed) and checks the numel."""
    dims = list(new) if isinstance(new, Sequence) else [new]
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int | np.integer):
            raise TypeError(f"{where}: expected ints in the new shape, got {d!r}.")
    dims = [int(d) for d in dims]
    numel = old.numel()
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise ValueError(
            f"{where}: expected non-negative dims and at most one -1, got {_fmt_shape(dims)}."
        )
    if -1 in dims:
        known = 1
        for d in dims:
            if d != -1:
                known *= d
        if known == 0 or numel % known:
            raise ValueError(
                f"{where}: cannot reshape shape {_fmt_shape(old)} ({numel} elements) to "
                f"{_fmt_shape(dims)}."
            )
        dims[dims.index(-1)] = numel // known
    size = torch.Size(dims)
    if size.numel() != numel:
        raise ValueError(
            f"{where}: cannot reshape shape {_fmt_shape(old)} ({numel} elements) to "
            f"{_fmt_shape(size)} ({size.numel()} elements)."
        )
    return size


def _prepend(shape: Any, base: torch.Size, where: str) -> torch.Size:
    """``(*shape, *base)``: the hot path of every ``rand``/``zero``, validated only on failure."""
    if isinstance(shape, int):
        shape = (shape,)
    elif not shape:
        return base
    try:
        size = torch.Size((*shape, *base))
    except TypeError:
        size = None
    if size is None or any(d < 0 for d in shape):
        _as_size(shape, where, "the leading shape")
    return size  # type: ignore[return-value]


def _index_shape(batch: torch.Size, index: Any, where: str, hint: str = "") -> torch.Size:
    """Returns the shape of ``tensor[index]`` for a tensor of shape ``batch``.

    Raises:
        IndexError: ``index`` does not fit ``batch``; the message says so and adds ``hint``.
    """
    if isinstance(index, torch.Tensor) and index.device.type != "cpu":
        index = index.cpu()
    elif isinstance(index, tuple):
        index = tuple(
            i.cpu() if isinstance(i, torch.Tensor) and i.device.type != "cpu" else i for i in index
        )
    try:
        return torch.empty(()).expand(batch)[index].shape
    except IndexError as err:
        raise IndexError(
            f"{where}: index {index!r} does not fit the indexable dims {_fmt_shape(batch)} "
            f"({err}).{hint}"
        ) from None


def _extend_index(index: Any, extra: int) -> Any:
    """Appends ``extra`` full slices so ``index`` leaves trailing dims alone."""
    if extra == 0:
        return index
    base = index if isinstance(index, tuple) else (index,)
    return (*base, *([slice(None)] * extra))


def _norm_dim(dim: int, ndim: int, where: str) -> int:
    """Normalises a (possibly negative) dim of a tensor of ``ndim`` dims."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{where}: expected an int dim, got {dim!r}.")
    low, high = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not low <= dim <= high:
        raise IndexError(
            f"{where}: dim {dim} is out of range for {ndim} dims (expected {low} to {high})."
        )
    return dim % ndim if ndim else 0


class TensorSpec(ABC):
    """Base class of all tensor specs: what a tensor (or a TensorDict) may hold.

    A spec describes the shape, dtype, device and domain of an entry, and can sample
    (:meth:`rand`), allocate (:meth:`zero`), check (:meth:`is_in`), clamp (:meth:`project`)
    and convert (:meth:`encode`, :meth:`to_numpy`) values of it.

    Shape convention: ``spec.shape`` is the *full* shape of one value, leading batch dims
    included. An action of 3 floats in an env of batch size ``[4]`` has
    ``Bounded(-1, 1, shape=(4, 3))``. ``rand(shape)`` and ``zero(shape)`` prepend ``shape``:
    they return tensors of shape ``(*shape, *spec.shape)``. Shape operations
    (``expand``, ``squeeze``, ``unsqueeze``, ``reshape``, ``__getitem__``) act on the full
    shape like the ``torch.Tensor`` methods of the same name, except that the event dim of
    one-hot like specs (``OneHot``, ``MultiOneHot``, ``MultiCategorical``) cannot be touched. A :class:`~rl_core.specs.Composite` has a batch ``shape`` that every entry's
    shape starts with.

    Device convention: ``device=None`` means "no device pinned": values are created on
    torch's default device, ``encode`` leaves tensors where they are (numpy goes to the CPU)
    and ``is_in`` accepts any device. A spec with a device checks it.

    Subclasses implement :meth:`rand`, :meth:`zero`, :meth:`one`, :meth:`project`,
    :meth:`encode`, :meth:`to_numpy`, :meth:`to`, :meth:`clone`, the shape operations,
    ``__eq__`` and :meth:`_failure`, from which :meth:`is_in` and :meth:`assert_is_in` derive.

    Examples:
        >>> import torch
        >>> from rl_core.specs import Bounded
        >>> spec = Bounded(-1.0, 1.0, shape=(4, 3))
        >>> spec.rand().shape, spec.rand((2,)).shape
        (torch.Size([4, 3]), torch.Size([2, 4, 3]))
        >>> spec[0].shape
        torch.Size([3])
    """

    shape: torch.Size
    device: torch.device | None
    space: Any = None  # leaf specs: the allowed values as a Box (TorchRL's ``spec.space``)

    @property
    def ndim(self) -> int:
        """Number of dims of ``shape``."""
        return len(self.shape)

    @property
    @abstractmethod
    def dtype(self) -> torch.dtype | None:
        """The dtype of the values (``None`` where not defined)."""

    @abstractmethod
    def rand(self, shape: ShapeLike = ()) -> Any:
        """Samples a value of shape ``(*shape, *self.shape)`` from the space.

        Each spec's own docstring says how it samples (uniformly, among valid choices...).

        Args:
            shape: leading dims to prepend. Defaults to ``()``.
        """

    @abstractmethod
    def zero(self, shape: ShapeLike = ()) -> Any:
        """Returns an all-zeros value of shape ``(*shape, *self.shape)``."""

    def zeros(self, shape: ShapeLike = ()) -> Any:
        """Alias of :meth:`zero`."""
        return self.zero(shape)

    @abstractmethod
    def one(self, shape: ShapeLike = ()) -> Any:
        """Returns an all-ones value of shape ``(*shape, *self.shape)``."""

    def ones(self, shape: ShapeLike = ()) -> Any:
        """Alias of :meth:`one`."""
        return self.one(shape)

    @abstractmethod
    def _failure(
        self, value: Any, path: tuple[str, ...] = ()
    ) -> tuple[str, tuple[str, ...], str] | None:
        """Returns ``None`` if ``value`` is in the space, else ``(spec class, key path, reason)``.

        ``path`` is the key path of ``value`` inside the enclosing Composites.
        """

    def is_in(self, value: Any) -> bool:
        """Whether ``value`` belongs to the space: type, shape, dtype, device and domain."""
        return self._failure(value) is None

    def assert_is_in(self, value: Any) -> None:
        """Raises ``ValueError`` naming the first check that ``value`` fails.

        Raises:
            ValueError: with the spec class, the key path (inside a Composite), and the
                shape, dtype, device or bound that failed.
        """
        failure = self._failure(value)
        if failure is None:
            return
        cls, path, reason = failure
        where = ""
        if path:
            where = f" at key {path[0]!r}" if len(path) == 1 else f" at key {path!r}"
        raise ValueError(f"{cls}.assert_is_in: value{where} {reason}.")

    @abstractmethod
    def project(self, value: Any) -> Any:
        """Maps ``value`` into the space (clamp, round, argmax...).

        Args:
            value: a tensor (or array-like) of shape ``self.shape``, or with leading batch dims
                ``(*batch, *self.shape)`` (projected element by element).

        Returns:
            A value of the spec's dtype that :meth:`is_in` accepts.

        Raises:
            ValueError: the shape does not end with ``self.shape``.
        """

    @abstractmethod
    def encode(self, value: Any, *, ignore_device: bool = False) -> Any:
        """Converts a numpy array, python value or tensor to a value of the spec."""

    @abstractmethod
    def to_numpy(self, value: Any, *, safe: bool = False) -> Any:
        """Converts a value of the spec to numpy."""

    @abstractmethod
    def to(self, device: DeviceLike | torch.dtype) -> TensorSpec:
        """Returns the spec on ``device``; a ``torch.dtype`` instead casts the spec to it."""

    def cpu(self) -> TensorSpec:
        """Returns the spec on the CPU."""
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> TensorSpec:
        """Returns the spec on a CUDA device."""
        return self.to("cuda" if device is None else f"cuda:{device}")

    @abstractmethod
    def clone(self) -> TensorSpec:
        """Returns a deep copy of the spec."""

    @abstractmethod
    def expand(self, *shape: Any) -> TensorSpec:
        """Returns the spec expanded to a new shape."""

    @abstractmethod
    def squeeze(self, dim: int | None = None) -> TensorSpec:
        """Returns the spec with singleton batch dims removed."""

    @abstractmethod
    def unsqueeze(self, dim: int) -> TensorSpec:
        """Returns the spec with a singleton dim inserted at ``dim``."""

    @abstractmethod
    def reshape(self, *shape: Any) -> TensorSpec:
        """Returns the spec reshaped."""

    def view(self, *shape: Any) -> TensorSpec:
        """Alias of :meth:`reshape`."""
        return self.reshape(*shape)

    @abstractmethod
    def __getitem__(self, index: Any) -> Any:
        """Indexes the batch dims (or, for a Composite, gets an entry)."""

    @abstractmethod
    def __eq__(self, other: object) -> bool: ...

    @classmethod
    def __torch_function__(
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        """Lets ``torch.stack([spec, ...], dim)`` stack specs (as :func:`stack_specs` does).

        Equal specs give the spec with a new dim of ``len(specs)`` at ``dim``; specs that
        differ give a :class:`~rl_core.specs.Stacked` (leaf specs) or a
        :class:`~rl_core.specs.StackedComposite` (Composites). Other torch functions are
        not defined on specs.
        """
        if func is not torch.stack:
            return NotImplemented
        return _STACK_HOOK["stack"](*args, **(kwargs or {}))

    __hash__ = None  # type: ignore[assignment]


#: ``torch.stack`` on specs (:func:`rl_core.specs.stack_specs` behind its argument checks). The
#: stacked types sit above this module, so :mod:`rl_core.specs.stacked_composite`, which defines
#: them, fills this slot when it is imported; the package ``rl_core.specs`` imports it, and any
#: import of a spec module imports the package first.
_STACK_HOOK: dict[str, Callable[..., TensorSpec]] = {}


__all__ = ["TensorSpec"]
