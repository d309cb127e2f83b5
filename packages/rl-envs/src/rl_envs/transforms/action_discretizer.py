"""ActionDiscretizer and FlattenAction: the policy's action space, reshaped or discretised."""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

import torch
from tensordict import TensorDictBase

from rl_core import (
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    TensorSpec,
    Transform,
)
from rl_core.keys import ACTION, NestedKey
from rl_envs.transforms._common import (
    bounds,
    check_negative_dim,
    feature_dim,
    map_action_leaves,
)


class ActionDiscretizer(Transform):
    """A continuous (Bounded) action shown as ``num_intervals`` choices per action dim.

    Each action dim's ``[low, high]`` is cut into ``n`` equal intervals of width ``w``; the
    policy picks one interval per dim and the env gets a point of it: ``low + (i + 0.5) * w``
    (``sampling=MEDIAN``, the default), ``low + i * w`` (``LOW``), ``low + (i + 1) * w``
    (``HIGH``) or ``low + (i + u) * w`` with ``u ~ U[0, 1)`` (``RANDOM``), as TorchRL. With
    ``categorical=True`` the policy writes the index ``i`` per dim (``Categorical``, or
    ``MultiCategorical`` when the dims have different counts); with ``categorical=False`` a
    one-hot block per dim, concatenated along the last dim (``OneHot`` for a scalar action,
    ``MultiOneHot`` for a vector).

    Args:
        num_intervals: the choices per dim (>= 2), or one count per action dim (a sequence or
            1-d tensor as long as the action's last dim).
        action_key: the action. Defaults to ``"action"``.
        out_action_key: the key the policy writes; default ``action_key``. When it differs,
            the env's (continuous) action stays visible as a state entry at ``action_key``:
            each step writes the point sent to the env there, as TorchRL.
        sampling: an :class:`ActionDiscretizer.SamplingStrategy` (or its int). Defaults to
            ``MEDIAN``.
        categorical: indices (True, the default) or one-hot blocks (False).

    Raises:
        ValueError: a count < 2, an unknown ``sampling``; (on the specs) per-dim counts that
            do not match the action's last dim.
        TypeError: (on the specs) the action is not Bounded with finite float bounds.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ActionDiscretizer(4)
        >>> t.low, t.high = torch.tensor([-2.0]), torch.tensor([2.0])
        >>> t.inv(TensorDict(action=torch.tensor([0])))["action"].tolist()
        [-1.5]
    """

    class SamplingStrategy(IntEnum):
        """Where in its interval a chosen action lands (TorchRL's values)."""

        MEDIAN = 0
        LOW = 1
        HIGH = 2
        RANDOM = 3

    def __init__(
        self,
        num_intervals: int | Sequence[int] | torch.Tensor,
        action_key: NestedKey = ACTION,
        out_action_key: NestedKey | None = None,
        sampling: SamplingStrategy | int | None = None,
        categorical: bool = True,
    ) -> None:
        counts = torch.as_tensor(num_intervals)
        if counts.is_floating_point() or counts.ndim > 1 or counts.numel() == 0:
            raise ValueError(
                f"ActionDiscretizer: expected num_intervals as an int >= 2 or a 1-d sequence of "
                f"them, got {num_intervals!r}."
            )
        if bool((counts < 2).any()):
            raise ValueError(
                f"ActionDiscretizer: expected num_intervals >= 2, got {num_intervals!r}."
            )
        try:
            strategy = self.SamplingStrategy(
                self.SamplingStrategy.MEDIAN if sampling is None else sampling
            )
        except ValueError as err:
            raise ValueError(
                f"ActionDiscretizer: sampling must be one of "
                f"{[m.name for m in self.SamplingStrategy]}, got {sampling!r}."
            ) from err
        super().__init__(
            in_keys_inv=[action_key],
            out_keys_inv=[action_key if out_action_key is None else out_action_key],
        )
        self.num_intervals = int(counts) if counts.ndim == 0 else counts.clone()
        self.sampling = strategy
        self.categorical = bool(categorical)
        self.register_buffer("low", None)
        self.register_buffer("high", None)

    def _counts(self, last: int | None) -> torch.Tensor:
        """The count of each action dim: ``[last]`` for a vector action, ``[]`` for a scalar."""
        counts = torch.as_tensor(self.num_intervals)
        if last is None:
            if counts.numel() != 1:
                raise ValueError(
                    f"ActionDiscretizer: a scalar action takes one count, got num_intervals="
                    f"{self.num_intervals!r}."
                )
            return counts.reshape(())
        if counts.ndim == 0:
            return counts.expand(last).clone()
        if counts.numel() != last:
            raise ValueError(
                f"ActionDiscretizer: expected {last} counts (the action's last dim), got "
                f"num_intervals={self.num_intervals!r}."
            )
        return counts

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        action_key, policy_key = self.in_keys_inv[0], self.out_keys_inv[0]
        value = tensordict.get(policy_key, None)
        if value is not None:
            action = self._inv_apply_transform(value)
            tensordict.set(action_key, action)
            if policy_key != action_key:
                self._sent = action  # written beside the policy's key by _step
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        # With its own out_action_key, the env's action the policy's choice mapped to is
        # kept in the step's input (a state entry of this env), as TorchRL.
        sent = self.__dict__.pop("_sent", None)
        if sent is not None and self.out_keys_inv[0] != self.in_keys_inv[0]:
            tensordict.set(self.in_keys_inv[0], sent)
        return next_tensordict

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        if self.low is None:
            raise RuntimeError(
                "ActionDiscretizer: the action bounds are unknown; put it in an env."
            )
        low, high = self.low.to(value.device), self.high.to(value.device)
        scalar = low.ndim == 0 or getattr(self, "_scalar", False)
        counts = self._counts(None if scalar else low.shape[-1]).to(value.device)
        if not self.categorical:  # one-hot blocks -> indices
            if scalar:
                value = value.to(torch.int64).argmax(-1)
            else:
                blocks = value.split(counts.tolist(), dim=-1)
                value = torch.stack([b.to(torch.int64).argmax(-1) for b in blocks], -1)
        width = (high - low) / counts.to(low.dtype)
        offset = {
            self.SamplingStrategy.MEDIAN: 0.5,
            self.SamplingStrategy.LOW: 0.0,
            self.SamplingStrategy.HIGH: 1.0,
        }.get(self.sampling)
        index = value.to(low.dtype)
        # RANDOM: a uniform point of the interval
        index = index + (torch.rand_like(index) if offset is None else offset)
        return low + index * width

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        found = bounds(spec)
        if found is None or not spec.dtype.is_floating_point:
            raise TypeError(
                f"ActionDiscretizer: the action {key!r} has a {type(spec).__name__} spec of "
                f"dtype {spec.dtype}; expected Bounded with finite float bounds."
            )
        parent = self.parent
        batch_dims = 0 if parent is None else len(parent.batch_size)
        event = spec.shape[batch_dims:]
        self._scalar = len(event) == 0
        index = (0,) * batch_dims  # one sub-env's bounds
        self.low, self.high = found[0][index].clone(), found[1][index].clone()
        counts = self._counts(None if self._scalar else event[-1])
        shape, device = spec.shape, spec.device
        if self._scalar:
            n = int(counts)
            if self.categorical:
                return Categorical(n, shape=shape, device=device)
            return OneHot(n, shape=(*shape, n), device=device)
        if not self.categorical:
            total = int(counts.sum())
            return MultiOneHot(counts.tolist(), shape=(*shape[:-1], total), device=device)
        if bool((counts == counts[0]).all()):
            return Categorical(int(counts[0]), shape=shape, device=device)
        return MultiCategorical(counts.tolist(), shape=shape, device=device)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        action_key, policy_key = self.in_keys_inv[0], self.out_keys_inv[0]
        original = input_spec["full_action_spec"].get(action_key, None)
        input_spec = map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map, "ActionDiscretizer"
        )
        if policy_key != action_key and original is not None:
            input_spec["full_state_spec"][action_key] = original.clone()
        return input_spec

    def extra_repr(self) -> str:
        return (
            f"num_intervals={self.num_intervals}, sampling={self.sampling.name}, "
            f"categorical={self.categorical}, {super().extra_repr()}"
        )


class FlattenAction(Transform):
    """A multi-dim action shown flat, as TorchRL's: the policy writes the dims
    ``first_dim..last_dim`` of the action merged into one, the env gets them unflattened.

    The inverse path (policy -> env) unflattens each ``out_keys_inv`` entry back to the span
    of its ``in_keys_inv`` action (read from the env's action spec, or given as
    ``action_shape``); the forward path (e.g. on replay-buffer samples) flattens ``in_keys``.

    Args:
        first_dim: the first dim to merge (negative; or, with ``allow_positive_dim``, counted
            from the first dim after the env's batch dims). Defaults to -2.
        last_dim: the last dim to merge (same rule; not before ``first_dim``). Defaults to -1.
        in_keys_inv: the env's actions. Defaults to ``["action"]`` (keyword-only).
        out_keys_inv: what the policy writes; default ``in_keys_inv`` (keyword-only).
        in_keys: entries the forward path flattens; default ``in_keys_inv`` (keyword-only).
        out_keys: where it writes them; default ``in_keys`` (keyword-only).
        allow_positive_dim: accept dims ``>= 0`` (keyword-only). Defaults to False.
        action_shape: the span ``first_dim..last_dim`` of the unflattened action, for use
            outside an env (keyword-only).

    Raises:
        ValueError: a dim ``>= 0`` without ``allow_positive_dim``, ``first_dim > last_dim``;
            (on the specs) an action without those dims.
        RuntimeError: (inverse) the action's span is unknown: put the transform in an env or
            pass ``action_shape``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = FlattenAction(-2, -1, action_shape=(2, 3))
        >>> t.inv(TensorDict(action=torch.zeros(5, 6), batch_size=[5]))["action"].shape
        torch.Size([5, 2, 3])
        >>> t(TensorDict(action=torch.zeros(5, 2, 3), batch_size=[5]))["action"].shape
        torch.Size([5, 6])
    """

    def __init__(
        self,
        first_dim: int = -2,
        last_dim: int = -1,
        *,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        allow_positive_dim: bool = False,
        action_shape: Sequence[int] | None = None,
    ) -> None:
        actions = [ACTION] if in_keys_inv is None else in_keys_inv
        super().__init__(
            in_keys=actions if in_keys is None else in_keys,
            out_keys=out_keys,
            in_keys_inv=actions,
            out_keys_inv=out_keys_inv,
        )
        self.allow_positive_dim = bool(allow_positive_dim)
        self._first_dim = check_negative_dim(
            first_dim, "FlattenAction", "first_dim", allow_positive_dim=self.allow_positive_dim
        )
        self._last_dim = check_negative_dim(
            last_dim, "FlattenAction", "last_dim", allow_positive_dim=self.allow_positive_dim
        )
        if (first_dim < 0) == (last_dim < 0) and first_dim > last_dim:
            raise ValueError(
                f"FlattenAction: expected first_dim <= last_dim, got {first_dim} > {last_dim}."
            )
        self.shapes: dict[NestedKey, torch.Size] = {}
        if action_shape is not None:
            for key in self.in_keys_inv:
                self.shapes[key] = torch.Size(int(n) for n in action_shape)

    @property
    def first_dim(self) -> int:
        """The tensor dim the merged span starts at."""
        return feature_dim(self, self._first_dim)

    @property
    def last_dim(self) -> int:
        """The tensor dim the merged span ends at."""
        return feature_dim(self, self._last_dim)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.flatten(self.first_dim, self.last_dim)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        # the merged dim of the flat action: first_dim when counted from the front, else
        # last_dim (the dims merged into it were all to its left)
        merged = self.first_dim if self._first_dim >= 0 else self.last_dim
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(out_key, None)
            if value is None:
                continue
            shape = self.shapes.get(in_key)
            if shape is None:
                raise RuntimeError(
                    f"FlattenAction: the span of the action {in_key!r} is unknown; put the "
                    f"transform in an env or pass action_shape=."
                )
            tensordict.set(in_key, value.unflatten(merged, shape))
        return tensordict

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        ndim = len(spec.shape)
        first, last = (
            d % ndim if -ndim <= d < ndim else None for d in (self.first_dim, self.last_dim)
        )
        if first is None or last is None or first > last:
            raise ValueError(
                f"FlattenAction: the action {key!r} of shape {tuple(spec.shape)} has no dims "
                f"{self.first_dim}..{self.last_dim} to flatten."
            )
        self.shapes[key] = spec.shape[first : last + 1]
        flat = (*spec.shape[:first], self.shapes[key].numel(), *spec.shape[last + 1 :])
        return spec.reshape(*flat)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map, "FlattenAction"
        )


__all__ = ["ActionDiscretizer", "FlattenAction"]
