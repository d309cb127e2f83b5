"""dm_env specs (``Array``, ``BoundedArray``, ``DiscreteArray``) as rl-core specs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from rl_core.specs import Bounded, Categorical, Composite, TensorSpec, Unbounded


def torch_dtype(dtype: Any) -> torch.dtype:
    """The torch dtype of a numpy dtype (``np.float64`` -> ``torch.float64``)."""
    return torch.from_numpy(np.zeros(0, dtype=np.dtype(dtype))).dtype


def entry_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Scalars become ``(1,)`` entries (as rewards and done flags are)."""
    return tuple(shape) if len(shape) else (1,)


def dm_env_spec_to_spec(spec: Any, owner: str, key: str = "") -> TensorSpec:
    """One dm_env spec as an rl-core spec (scalars shaped ``(1,)``).

    ``DiscreteArray`` -> ``Categorical``, ``BoundedArray`` -> ``Bounded``, ``Array`` ->
    ``Unbounded``; the dtype is the dm_env spec's, a dict of specs becomes a ``Composite``.

    Raises:
        TypeError: ``spec`` is none of these.
    """
    from dm_env import specs

    if isinstance(spec, Mapping):
        return Composite({k: dm_env_spec_to_spec(v, owner, k) for k, v in spec.items()})
    shape = entry_shape(spec.shape)
    dtype = torch_dtype(spec.dtype)
    if isinstance(spec, specs.DiscreteArray):
        return Categorical(int(spec.num_values), shape=tuple(spec.shape), dtype=dtype)
    if isinstance(spec, specs.BoundedArray):
        low = torch.as_tensor(np.array(np.broadcast_to(spec.minimum, spec.shape)), dtype=dtype)
        high = torch.as_tensor(np.array(np.broadcast_to(spec.maximum, spec.shape)), dtype=dtype)
        return Bounded(low.reshape(shape), high.reshape(shape), shape=shape, dtype=dtype)
    if isinstance(spec, specs.Array):
        return Unbounded(shape=shape, dtype=dtype)
    raise TypeError(
        f"{owner}: expected a dm_env spec (Array, BoundedArray, DiscreteArray or a dict of "
        f"them) for {key or 'an entry'!r}, got {type(spec).__name__}."
    )


def to_tensor(value: Any, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A dm_env value (array or scalar) as a fresh tensor of ``shape`` and ``dtype``."""
    array = np.asarray(value)
    return torch.from_numpy(array.copy()).to(dtype).reshape(shape)
