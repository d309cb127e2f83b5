"""UnaryTransform: a function applied to entries (and, on the inverse path, to actions)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack

from rl_core import Composite, NonTensor, TensorSpec, Transform, Unbounded
from rl_core.keys import NestedKey
from rl_envs.transforms._common import map_action_leaves, map_output_leaves

_Keys = NestedKey | Sequence[NestedKey] | None


class UnaryTransform(Transform):
    """Writes ``fn(value)`` of each ``in_keys`` entry at the matching ``out_keys`` (TorchRL's
    ``UnaryTransform``); on the inverse path, ``inv_fn`` (default ``fn``) maps what the policy
    writes at ``out_keys_inv`` to the ``in_keys_inv`` the env reads.

    The spec of an output is read from ``fn`` applied to the input spec's zero value: an
    ``Unbounded`` of the result's shape and dtype when it is a tensor, a ``NonTensor``
    otherwise. A policy-side action's spec is read the same way, from ``fn`` on the env's
    action spec (as TorchRL: the forward function describes both directions).

    Args:
        in_keys: the entries ``fn`` reads.
        out_keys: where it writes; default ``in_keys``.
        in_keys_inv: the env's entries the inverse path writes.
        out_keys_inv: what the policy writes, read by the inverse path; default
            ``in_keys_inv``.
        fn: the function (keyword-only). Non-tensor entries are given as their payload (a
            list for a stack) unless ``use_raw_nontensor``.
        inv_fn: the inverse path's function; default ``fn`` (keyword-only).
        use_raw_nontensor: give ``NonTensorData``/``NonTensorStack`` entries to the functions
            as they are (keyword-only). Defaults to False.

    Raises:
        TypeError: ``fn`` or ``inv_fn`` is not callable.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = UnaryTransform(["x"], ["y"], fn=torch.square)
        >>> t(TensorDict(x=torch.tensor([2.0, 3.0])))["y"].tolist()
        [4.0, 9.0]
    """

    def __init__(
        self,
        in_keys: _Keys,
        out_keys: _Keys = None,
        in_keys_inv: _Keys = None,
        out_keys_inv: _Keys = None,
        *,
        fn: Callable[[Any], Any],
        inv_fn: Callable[[Any], Any] | None = None,
        use_raw_nontensor: bool = False,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        for name, value in (("fn", fn), ("inv_fn", inv_fn)):
            if value is not None and not callable(value):
                raise TypeError(
                    f"UnaryTransform: expected {name} as a callable, got {type(value).__name__}."
                )
        self.fn = fn
        self.inv_fn = inv_fn
        self.use_raw_nontensor = bool(use_raw_nontensor)

    def _payload(self, value: Any) -> Any:
        if self.use_raw_nontensor:
            return value
        if isinstance(value, NonTensorStack):
            return value.tolist()
        if isinstance(value, NonTensorData):
            return value.data
        return value

    def _apply_transform(self, value: Any) -> Any:
        return self.fn(self._payload(value))

    def _inv_apply_transform(self, value: Any) -> Any:
        return (self.fn if self.inv_fn is None else self.inv_fn)(self._payload(value))

    def _map_spec(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        example = spec.zero() if not isinstance(spec, NonTensor) else spec.example_data
        out = self._apply_transform(example)
        if isinstance(out, torch.Tensor):
            return Unbounded(shape=out.shape, dtype=out.dtype, device=spec.device)
        return NonTensor(shape=spec.shape, device=spec.device, example_data=out)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map_spec, "UnaryTransform"
        )

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map_spec, "UnaryTransform"
        )


__all__ = ["UnaryTransform"]
