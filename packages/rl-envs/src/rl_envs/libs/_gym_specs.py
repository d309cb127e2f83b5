"""Conversion between gymnasium spaces and rl-core specs, both ways.

:func:`gym_space_to_spec` turns a space into the spec of the values the wrapper writes;
:func:`spec_to_gym_space` goes back. The value conversions (numpy to tensors and back) that
follow the same rules live in :mod:`rl_envs.libs._gym_codecs`.

Mapping (``B`` is the batch shape, ``()`` for a single env, ``(num_envs,)`` for a vector env):

==========================  =================================================================
gymnasium space             spec
==========================  =================================================================
``Box``                     ``Bounded(low, high)``; ``Unbounded`` when every bound is infinite;
                            the dtype of the space (float32 for a default ``Box``)
``Discrete(n)``             ``OneHot(n)`` (int64) of shape ``(*B, n)``, or ``Categorical(n)``
                            (the space's dtype, int64 by default) of shape ``B`` with
                            ``categorical_action_encoding=True``
``MultiDiscrete(nvec)``     ``MultiOneHot(nvec)`` (int64), or ``MultiCategorical(nvec)`` (the
                            space's dtype; categorical); a multi-dim ``nvec`` with one value
                            ``n`` gives ``OneHot(n)`` / ``Categorical(n)`` of that shape
``MultiBinary(n)``          ``Binary(n)`` (the space's dtype, int8 by default)
``Dict``                    ``Composite`` with the same (string) keys, nested
``Tuple``                   the members' specs stacked along a new dim after ``B``
                            (:func:`rl_core.specs.stack_specs`); their values must stack into
                            one tensor (same shape and dtype)
``Text``                    ``NonTensor`` holding strings
==========================  =================================================================

The dtypes are TorchRL's, so code that checks or allocates by dtype keeps working.
``Discrete``/``MultiDiscrete`` ``start`` offsets are removed: index 0 of the spec is the
space's ``start``. Other spaces (``Graph``, ``Sequence``, ``OneOf``) raise ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from rl_core.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    Stacked,
    TensorSpec,
    Unbounded,
    stack_specs,
)


def torch_dtype(np_dtype: Any) -> torch.dtype:
    """The torch dtype of a numpy dtype (``np.float32`` -> ``torch.float32``)."""
    return torch.from_numpy(np.empty(0, dtype=np_dtype)).dtype


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype of a torch dtype (bfloat16, which numpy lacks, maps to float32)."""
    if dtype is torch.bfloat16:
        return np.dtype(np.float32)
    return torch.empty(0, dtype=dtype).numpy().dtype


def _import_spaces() -> Any:
    try:
        from gymnasium import spaces
    except ImportError as err:
        raise ImportError(
            'gym_space_to_spec needs gymnasium: pip install "rl-envs[gymnasium]".'
        ) from err
    return spaces


def discrete_start(space: Any) -> int | np.ndarray:
    """The ``start`` offset of a ``Discrete``/``MultiDiscrete`` space (0 when it has none)."""
    start = getattr(space, "start", 0)
    if isinstance(start, np.ndarray):
        return start if bool(start.any()) else 0
    return int(start)


def gym_space_to_spec(
    space: Any,
    *,
    batch_size: Sequence[int] = (),
    categorical_action_encoding: bool = False,
    device: torch.device | str | None = None,
) -> TensorSpec:
    """Converts a gymnasium space to the rl-core spec of its values.

    Args:
        space: a ``gymnasium.spaces.Space`` (for a vector env, its ``single_*_space``).

    Keyword Args:
        batch_size: batch dims prepended to every shape (``(num_envs,)`` for a vector env).
            Defaults to ``()``.
        categorical_action_encoding: ``Discrete`` -> ``Categorical`` (indices) instead of
            ``OneHot``; ``MultiDiscrete`` -> ``MultiCategorical`` instead of ``MultiOneHot``.
            Defaults to ``False``.
        device: the device of the specs. Defaults to ``None``.

    Returns:
        A leaf spec, or a ``Composite`` for a ``Dict`` space.

    Raises:
        TypeError: the space type is not supported, a ``Dict`` key is not a string, or a
            ``Tuple`` holds members whose values do not stack into one tensor.

    Examples:
        >>> from gymnasium import spaces
        >>> from rl_envs.libs import gym_space_to_spec
        >>> gym_space_to_spec(spaces.Discrete(3))
        OneHot(shape=(3,), dtype=int64, n=3)
        >>> gym_space_to_spec(spaces.Discrete(3), categorical_action_encoding=True, batch_size=(4,))
        Categorical(shape=(4,), dtype=int64, n=3)
        >>> gym_space_to_spec(spaces.Box(-1.0, 1.0, shape=(2,))).shape
        torch.Size([2])
    """
    spaces = _import_spaces()
    batch = tuple(int(b) for b in batch_size)
    return _convert(spaces, space, batch, bool(categorical_action_encoding), device)


# Conversions registered with register_gym_spec_conversion: a space class, or the dotted name
# of one under gymnasium.spaces (resolved when a space is converted), -> the function.
_REGISTRY: dict[Any, Callable[..., TensorSpec]] = {}


def register_gym_spec_conversion(
    spec_type: type | str,
) -> Callable[[Callable[..., TensorSpec]], Callable[..., TensorSpec]]:
    """Registers how a gymnasium space type becomes a spec (TorchRL's decorator).

    :func:`gym_space_to_spec` (and so ``GymWrapper``/``GymEnv``, for observations, actions
    and nested ``Dict``/``Tuple`` members) asks the registry first: the function registered
    for the space's class, or for the nearest of its base classes, converts it; a space no
    registered type matches gets the built-in conversion. A registration replaces an earlier
    one for the same type, built-in types included. The function is called as
    ``fn(space, dtype=None, device=..., categorical_action_encoding=...,
    remap_state_to_observation=False, batch_size=...)`` (TorchRL's keywords; it may take
    ``**kwargs`` for the ones it ignores) and returns a spec whose shape starts with
    ``batch_size``. The values of the space are then read as the returned spec's type says
    (a ``Bounded``/``Unbounded`` value as an array of the space's ``dtype``).

    Args:
        spec_type: the space class, or its dotted name under ``gymnasium.spaces``
            (``"Box"``, ``"Graph"``).

    Returns:
        The decorator, which registers the function and returns it unchanged.

    Raises:
        TypeError: ``spec_type`` is neither a class nor a string, or the decorated object is
            not callable.

    Examples:
        >>> from gymnasium import spaces
        >>> from rl_core import Unbounded
        >>> class Angle(spaces.Box):
        ...     pass
        >>> @register_gym_spec_conversion(Angle)
        ... def _angle(space, *, device=None, batch_size=(), **kwargs):
        ...     return Unbounded(shape=(*batch_size, *space.shape), device=device)
        >>> gym_space_to_spec(Angle(-3.2, 3.2, shape=(1,)), batch_size=(4,))
        Unbounded(shape=(4, 1), dtype=float32)
    """
    if not isinstance(spec_type, type | str):
        raise TypeError(
            f"register_gym_spec_conversion: expected a gymnasium space class or its dotted name "
            f"under gymnasium.spaces, got {type(spec_type).__name__}."
        )

    def decorator(fn: Callable[..., TensorSpec]) -> Callable[..., TensorSpec]:
        if not callable(fn):
            raise TypeError(
                f"register_gym_spec_conversion({spec_type!r}): expected a function, got "
                f"{type(fn).__name__}."
            )
        _REGISTRY[spec_type] = fn
        return fn

    return decorator


def _registered(spaces: Any, space: Any) -> Callable[..., TensorSpec] | None:
    if not _REGISTRY:
        return None
    by_class: dict[type, Callable[..., TensorSpec]] = {}
    for key, fn in _REGISTRY.items():
        if isinstance(key, str):
            target: Any = spaces
            for part in key.split("."):
                target = getattr(target, part, None)
            if isinstance(target, type):
                by_class[target] = fn
        else:
            by_class[key] = fn
    for base in type(space).__mro__:
        if base in by_class:
            return by_class[base]
    return None


def _convert(spaces: Any, space: Any, batch: tuple[int, ...], categorical: bool, device: Any):
    registered = _registered(spaces, space)
    if registered is not None:
        return registered(
            space,
            dtype=None,
            device=device,
            categorical_action_encoding=categorical,
            remap_state_to_observation=False,
            batch_size=torch.Size(batch),
        )
    if isinstance(space, spaces.Box):
        return _box_spec(space, batch, device)
    if isinstance(space, spaces.Discrete):
        n = int(space.n)
        if categorical:
            return Categorical(n, shape=batch, device=device, dtype=torch_dtype(space.dtype))
        return OneHot(n, shape=(*batch, n), device=device, dtype=torch.int64)
    if isinstance(space, spaces.MultiDiscrete):
        return _multi_discrete_spec(space, batch, categorical, device)
    if isinstance(space, spaces.MultiBinary):
        shape = (*batch, *space.shape)
        return Binary(shape[-1], shape=shape, device=device, dtype=torch_dtype(space.dtype))
    if isinstance(space, spaces.Dict):
        entries = {}
        for key, sub in space.spaces.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"gym_space_to_spec: Dict space keys must be strings to become TensorDict "
                    f"keys, got {key!r} ({type(key).__name__}). Rename the keys with a "
                    f"gymnasium wrapper."
                )
            entries[key] = _convert(spaces, sub, batch, categorical, device)
        return Composite(entries, shape=batch, device=device)
    if isinstance(space, spaces.Tuple):
        return _tuple_spec(spaces, space, batch, categorical, device)
    if isinstance(space, spaces.Text):
        return NonTensor(shape=batch, device=device, example_data="")
    raise TypeError(
        f"gym_space_to_spec: the gymnasium space {type(space).__name__} is not supported (got "
        f"{space}). Supported: Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple, Text. "
        f"Flatten or convert it with a gymnasium wrapper first."
    )


def _box_spec(space: Any, batch: tuple[int, ...], device: Any) -> TensorSpec:
    shape = (*batch, *space.shape)
    dtype = torch_dtype(space.dtype)
    low, high = np.asarray(space.low), np.asarray(space.high)
    if dtype.is_floating_point and np.all(np.isneginf(low)) and np.all(np.isposinf(high)):
        return Unbounded(shape=shape, device=device, dtype=dtype)
    return Bounded(torch.from_numpy(low), torch.from_numpy(high), shape, device, dtype)


def _multi_discrete_spec(
    space: Any, batch: tuple[int, ...], categorical: bool, device: Any
) -> TensorSpec:
    nvec = np.asarray(space.nvec)
    index_dtype = torch_dtype(space.dtype)
    if nvec.ndim == 1:
        if categorical:
            return MultiCategorical(
                nvec.tolist(), shape=(*batch, len(nvec)), device=device, dtype=index_dtype
            )
        return MultiOneHot(
            nvec.tolist(), shape=(*batch, int(nvec.sum())), device=device, dtype=torch.int64
        )
    n = int(nvec.flat[0])
    if not bool((nvec == n).all()):
        raise TypeError(
            f"gym_space_to_spec: a MultiDiscrete space with a {nvec.ndim}-d nvec is supported "
            f"only when every entry has the same number of choices, got nvec={nvec.tolist()}. "
            f"Flatten the space (gymnasium.wrappers.FlattenObservation) first."
        )
    shape = (*batch, *nvec.shape)
    if categorical:
        return Categorical(n, shape=shape, device=device, dtype=index_dtype)
    return OneHot(n, shape=(*shape, n), device=device, dtype=torch.int64)


def _tuple_spec(
    spaces: Any, space: Any, batch: tuple[int, ...], categorical: bool, device: Any
) -> TensorSpec:
    members = [_convert(spaces, sub, batch, categorical, device) for sub in space.spaces]
    if not members:
        raise TypeError("gym_space_to_spec: an empty Tuple space has no values to hold.")
    if any(isinstance(m, Composite | NonTensor | Stacked) for m in members):
        raise TypeError(
            f"gym_space_to_spec: a Tuple space is supported when its members are tensor spaces "
            f"(Box, Discrete, MultiDiscrete, MultiBinary, or Tuples of them that stack), got "
            f"{space}. Flatten it with gymnasium.wrappers.FlattenObservation first."
        )
    if len({(tuple(m.shape), m.dtype) for m in members}) != 1:
        hint = (
            " Pass categorical_action_encoding=True so Discrete members become scalar indices."
            if not categorical and any(isinstance(m, OneHot) for m in members)
            else " Flatten it with gymnasium.wrappers.FlattenObservation first."
        )
        raise TypeError(
            f"gym_space_to_spec: the members of the Tuple space {space} give values of "
            f"different shapes or dtypes ({[(tuple(m.shape), m.dtype) for m in members]}), "
            f"which do not stack into one tensor.{hint}"
        )
    return stack_specs(members, dim=len(batch))


def spec_to_gym_space(spec: TensorSpec, *, batch_ndim: int = 0) -> Any:
    """Converts an rl-core spec to the gymnasium space of one sub-env's values.

    Args:
        spec: a leaf spec or a ``Composite``.

    Keyword Args:
        batch_ndim: the number of leading batch dims of ``spec`` to drop. Defaults to ``0``.

    Returns:
        A ``gymnasium.spaces.Space``: ``Bounded`` -> ``Box``, ``Unbounded`` -> an infinite
        ``Box``, ``Categorical``/``OneHot`` -> ``Discrete``, ``MultiCategorical``/
        ``MultiOneHot`` -> ``MultiDiscrete``, ``Binary`` -> ``MultiBinary``, ``Composite`` ->
        ``Dict``, ``NonTensor`` -> ``Text``.

    Raises:
        TypeError: the spec type has no gymnasium counterpart.

    Examples:
        >>> from rl_core.specs import Bounded, Composite, OneHot
        >>> from rl_envs.libs import spec_to_gym_space
        >>> spec_to_gym_space(OneHot(4))
        Discrete(4)
        >>> spec_to_gym_space(Composite(x=Bounded(0.0, 1.0, shape=(5, 2)), shape=(5,)), batch_ndim=1)
        Dict('x': Box(0.0, 1.0, (2,), float32))
    """
    spaces = _import_spaces()
    return _to_space(spaces, spec, batch_ndim)


def _to_space(spaces: Any, spec: TensorSpec, nb: int) -> Any:
    shape = tuple(spec.shape[nb:])
    if isinstance(spec, Composite):
        return spaces.Dict({k: _to_space(spaces, spec[k], nb) for k in spec.keys()})
    if isinstance(spec, Bounded):
        index = (0,) * nb
        low, high = spec.low[index].cpu().numpy(), spec.high[index].cpu().numpy()
        return spaces.Box(low, high, shape, dtype=numpy_dtype(spec.dtype))
    if isinstance(spec, Unbounded):
        dtype = numpy_dtype(spec.dtype)
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            return spaces.Box(info.min, info.max, shape, dtype=dtype)
        return spaces.Box(-np.inf, np.inf, shape, dtype=dtype)
    if isinstance(spec, OneHot):
        if len(shape) == 1:
            return spaces.Discrete(spec.n)
        return spaces.MultiDiscrete(np.full(shape[:-1], spec.n))
    if isinstance(spec, Categorical):
        return spaces.MultiDiscrete(np.full(shape, spec.n)) if shape else spaces.Discrete(spec.n)
    if isinstance(spec, MultiCategorical | MultiOneHot):
        return spaces.MultiDiscrete(spec.nvec.numpy())
    if isinstance(spec, Binary):
        return spaces.MultiBinary(shape[0] if len(shape) == 1 else list(shape))
    if isinstance(spec, NonTensor):
        return spaces.Text(max_length=4096)
    raise TypeError(
        f"spec_to_gym_space: no gymnasium space for a {type(spec).__name__} spec ({spec!r})."
    )


__all__ = ["gym_space_to_spec", "spec_to_gym_space"]
