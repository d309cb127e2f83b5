"""Shape transforms: UnsqueezeTransform, SqueezeTransform, FlattenObservation, PermuteTransform."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rl_core import Bounded, Composite, TensorSpec, Transform, Unbounded
from rl_core.keys import NestedKey
from rl_envs.transforms._common import (
    check_negative_dim,
    feature_dim,
    map_action_leaves,
    map_output_leaves,
    map_spec_leaves,
)

_Keys = NestedKey | Sequence[NestedKey] | None


class _ShapeTransform(Transform):
    """A shape change applied to observations (forward) and undone on actions (inverse)."""

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        raise NotImplementedError

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        name = type(self).__name__
        return map_output_leaves(output_spec, self.in_keys, self.out_keys, self._map, name)

    def transform_observation_spec(self, observation_spec: TensorSpec) -> TensorSpec:
        """The observation spec (a Composite, or the one entry's spec) as the transform
        shows it; the env path maps the whole output spec instead."""
        name = type(self).__name__
        return map_spec_leaves(observation_spec, self.in_keys, self.out_keys, self._map, name)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        name = type(self).__name__
        return map_action_leaves(input_spec, self.in_keys_inv, self.out_keys_inv, self._map, name)


class UnsqueezeTransform(_ShapeTransform):
    """Inserts a singleton dim at ``dim``; the inverse path removes it from actions.

    Args:
        dim: a negative dim, counted from the last; or, with ``allow_positive_dim``, a dim
            ``>= 0``: the ``dim``-th dim after the batch dims of the env the transform sits
            in (outside an env, the tensor's own dim ``dim``, whatever the batch size of the
            TensorDict it is given).
        in_keys: entries to unsqueeze.
        out_keys: where to write them; default ``in_keys``.
        in_keys_inv: actions the env reads without the dim.
        out_keys_inv: the keys the policy writes (with the dim); default ``in_keys_inv``.
        allow_positive_dim: accept a ``dim >= 0`` (keyword-only; default False).

    Raises:
        ValueError: ``dim >= 0`` without ``allow_positive_dim``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = UnsqueezeTransform(-1, in_keys=["x"])
        >>> t(TensorDict(x=torch.zeros(3, 2), batch_size=[3]))["x"].shape
        torch.Size([3, 2, 1])
    """

    def __init__(
        self,
        dim: int,
        in_keys: _Keys = None,
        out_keys: _Keys = None,
        in_keys_inv: _Keys = None,
        out_keys_inv: _Keys = None,
        *,
        allow_positive_dim: bool = False,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        name = type(self).__name__
        self.allow_positive_dim = bool(allow_positive_dim)
        self._dim = check_negative_dim(dim, name, allow_positive_dim=self.allow_positive_dim)

    @property
    def dim(self) -> int:
        """The tensor dim the transform acts on (a dim ``>= 0`` shifted by the env's batch
        dims, see the class docstring)."""
        return feature_dim(self, self._dim)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.unsqueeze(self.dim)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.squeeze(self.dim)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        dim = self.dim
        return spec.unsqueeze(dim if dim >= 0 else len(spec.shape) + 1 + dim)


class SqueezeTransform(UnsqueezeTransform):
    """Removes the singleton dim ``dim``; the inverse path adds it back to actions.

    Args:
        dim: a negative dim, counted from the last; or, with ``allow_positive_dim``, a dim
            ``>= 0`` counted as in :class:`UnsqueezeTransform`. It must have size 1.
        in_keys: entries to squeeze.
        out_keys: where to write them; default ``in_keys``.
        in_keys_inv: actions the env reads with the dim.
        out_keys_inv: the keys the policy writes (without it); default ``in_keys_inv``.
        allow_positive_dim: accept a ``dim >= 0`` (keyword-only; default False).

    Raises:
        ValueError: ``dim >= 0`` without ``allow_positive_dim``; (on the specs) the dim of an
            entry does not have size 1.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = SqueezeTransform(-1, in_keys=["x"])
        >>> t(TensorDict(x=torch.zeros(3, 2, 1), batch_size=[3]))["x"].shape
        torch.Size([3, 2])
    """

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.squeeze(self.dim)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.unsqueeze(self.dim)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        dim = self.dim
        ndim = len(spec.shape)
        index = dim if dim >= 0 else ndim + dim
        if not 0 <= index < ndim or spec.shape[index] != 1:
            raise ValueError(
                f"SqueezeTransform: the entry {key!r} of shape {tuple(spec.shape)} has no "
                f"singleton dim {dim}."
            )
        return spec.squeeze(index)


class FlattenObservation(_ShapeTransform):
    """Flattens the dims ``first_dim..last_dim`` of entries into one.

    Args:
        first_dim: the first dim to flatten (negative; or, with ``allow_positive_dim``,
            ``>= 0``: counted from the first dim after the env's batch dims, as in
            :class:`UnsqueezeTransform`).
        last_dim: the last dim to flatten (same rule; not before ``first_dim``).
        in_keys: entries to flatten. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.
        allow_positive_dim: accept dims ``>= 0`` (keyword-only; default False).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = FlattenObservation(-3, -1, in_keys=["x"])
        >>> t(TensorDict(x=torch.zeros(5, 2, 3, 4), batch_size=[5]))["x"].shape
        torch.Size([5, 24])
    """

    def __init__(
        self,
        first_dim: int,
        last_dim: int,
        in_keys: _Keys = None,
        out_keys: _Keys = None,
        *,
        allow_positive_dim: bool = False,
    ) -> None:
        super().__init__("pixels" if in_keys is None else in_keys, out_keys)
        self.allow_positive_dim = bool(allow_positive_dim)
        self._first_dim = check_negative_dim(
            first_dim, "FlattenObservation", "first_dim", allow_positive_dim=allow_positive_dim
        )
        self._last_dim = check_negative_dim(
            last_dim, "FlattenObservation", "last_dim", allow_positive_dim=allow_positive_dim
        )
        if (first_dim < 0) == (last_dim < 0) and first_dim > last_dim:
            raise ValueError(
                f"FlattenObservation: expected first_dim <= last_dim, got {first_dim} > {last_dim}."
            )

    @property
    def first_dim(self) -> int:
        """The tensor dim the flattening starts at."""
        return feature_dim(self, self._first_dim)

    @property
    def last_dim(self) -> int:
        """The tensor dim the flattening ends at."""
        return feature_dim(self, self._last_dim)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.flatten(self.first_dim, self.last_dim)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        first, last = self.first_dim, self.last_dim
        ndim = len(spec.shape)
        if not -ndim <= first < ndim or not -ndim <= last < ndim:
            raise ValueError(
                f"FlattenObservation: the entry {key!r} of shape {tuple(spec.shape)} has no dims "
                f"{first}..{last}."
            )
        return spec.reshape(torch.zeros(spec.shape, device="meta").flatten(first, last).shape)


class PermuteTransform(_ShapeTransform):
    """Permutes the last ``len(dims)`` dims of entries; the inverse path undoes it on actions.

    Args:
        dims: a permutation of ``[-len(dims), ..., -1]``: output dim ``i`` (counted among
            the last ``len(dims)``) is input dim ``dims[i]``.
        in_keys: entries to permute.
        out_keys: where to write them; default ``in_keys``.
        in_keys_inv: actions the env reads unpermuted.
        out_keys_inv: the keys the policy writes; default ``in_keys_inv``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = PermuteTransform([-1, -3, -2], in_keys=["pixels"])
        >>> t(TensorDict(pixels=torch.zeros(7, 84, 84, 3), batch_size=[7]))["pixels"].shape
        torch.Size([7, 3, 84, 84])
    """

    def __init__(
        self,
        dims: Sequence[int],
        in_keys: _Keys = None,
        out_keys: _Keys = None,
        in_keys_inv: _Keys = None,
        out_keys_inv: _Keys = None,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        dims = list(dims)
        if sorted(dims) != list(range(-len(dims), 0)):
            raise ValueError(
                f"PermuteTransform: dims must be a permutation of "
                f"{list(range(-len(dims), 0))}, got {dims}."
            )
        self.dims = dims
        self.inverse_dims = [dims.index(d) - len(dims) for d in range(-len(dims), 0)]

    @staticmethod
    def _permute(value: torch.Tensor, dims: list[int]) -> torch.Tensor:
        lead = value.ndim - len(dims)
        return value.permute(*range(lead), *[value.ndim + d for d in dims])

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return self._permute(value, self.dims)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return self._permute(value, self.inverse_dims)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if len(spec.shape) < len(self.dims):
            raise ValueError(
                f"PermuteTransform: the entry {key!r} of shape {tuple(spec.shape)} has fewer "
                f"than {len(self.dims)} dims."
            )
        shape = self._permute(torch.empty(spec.shape, device="meta"), self.dims).shape
        if isinstance(spec, Bounded):
            low = self._permute(spec.low, self.dims)
            high = self._permute(spec.high, self.dims)
            return Bounded(low, high, shape=shape, device=spec.device, dtype=spec.dtype)
        if isinstance(spec, Unbounded):
            return Unbounded(shape=shape, device=spec.device, dtype=spec.dtype)
        raise TypeError(
            f"PermuteTransform: cannot permute the {type(spec).__name__} spec of {key!r}; "
            f"expected Bounded or Unbounded."
        )


__all__ = ["FlattenObservation", "PermuteTransform", "SqueezeTransform", "UnsqueezeTransform"]
