"""DTypeCastTransform: entries shown in another dtype, actions given back in the env's;
DoubleToFloat, its float64-to-float32 case."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Composite, TensorSpec, Transform
from rl_core.keys import NestedKey
from rl_envs.transforms._common import (
    OBSERVATION_GROUP,
    REWARD_GROUP,
    leaf_keys,
    map_action_leaves,
    map_output_leaves,
    with_dtype,
)


class DTypeCastTransform(Transform):
    """Casts entries of ``dtype_in`` to ``dtype_out``; the inverse casts actions back.

    Args:
        dtype_in: the env's dtype.
        dtype_out: the dtype shown.
        in_keys: entries to cast; ``None``: every observation and reward of ``dtype_in`` (in
            an env), or every entry of ``dtype_in`` (on a plain TensorDict).
        out_keys: where to write them; default ``in_keys``.
        in_keys_inv: actions the env reads in ``dtype_in``; the policy writes ``dtype_out``.
        out_keys_inv: the keys the policy writes; default ``in_keys_inv``.

    Raises:
        TypeError: (on the specs) an entry listed in ``in_keys`` is not of ``dtype_in``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = DTypeCastTransform(torch.float64, torch.float32)
        >>> t(TensorDict(x=torch.zeros(2, dtype=torch.float64)))["x"].dtype
        torch.float32
    """

    def __init__(
        self,
        dtype_in: torch.dtype,
        dtype_out: torch.dtype,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        for name, dtype in (("dtype_in", dtype_in), ("dtype_out", dtype_out)):
            if not isinstance(dtype, torch.dtype):
                raise TypeError(f"DTypeCastTransform: {name} must be a torch.dtype, got {dtype!r}.")
        self.dtype_in = dtype_in
        self.dtype_out = dtype_out
        self.__dict__["_auto"] = in_keys is None

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.to(self.dtype_out) if value.dtype == self.dtype_in else value

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.to(self.dtype_in)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._auto and not self.in_keys:
            return tensordict.apply(self._apply_transform)
        return super()._call(tensordict)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if spec.dtype != self.dtype_in:
            raise TypeError(
                f"DTypeCastTransform: the entry {key!r} has dtype {spec.dtype}, expected "
                f"dtype_in={self.dtype_in}."
            )
        return with_dtype(spec, self.dtype_out, "DTypeCastTransform")

    def _map_inv(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if spec.dtype != self.dtype_in:
            raise TypeError(
                f"DTypeCastTransform: the action {key!r} has dtype {spec.dtype}, expected "
                f"dtype_in={self.dtype_in}."
            )
        return with_dtype(spec, self.dtype_out, "DTypeCastTransform")

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        if self._auto:
            found = []
            for group in (OBSERVATION_GROUP, REWARD_GROUP):
                leaves = output_spec[group]
                found += [k for k in leaf_keys(leaves) if leaves[k].dtype == self.dtype_in]
            self.in_keys = found
            self.out_keys = list(found)
        return map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map, "DTypeCastTransform"
        )

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map_inv, "DTypeCastTransform"
        )

    def extra_repr(self) -> str:
        return f"{self.dtype_in} -> {self.dtype_out}, {super().extra_repr()}"


class DoubleToFloat(DTypeCastTransform):
    """``DTypeCastTransform(torch.float64, torch.float32)``: float64 observations and rewards
    shown as float32, and the float32 actions listed in ``in_keys_inv`` given back as float64.

    Args:
        in_keys: entries to cast; ``None``: every float64 observation and reward (in an env),
            or every float64 entry (on a plain TensorDict).
        out_keys: where to write them; default ``in_keys``.
        in_keys_inv: actions the env reads as float64; the policy writes float32.
        out_keys_inv: the keys the policy writes; default ``in_keys_inv``.

    Raises:
        TypeError: (on the specs) an entry listed in ``in_keys`` or ``in_keys_inv`` is not
            float64.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(a=torch.zeros(2, dtype=torch.float64), b=torch.zeros(2, dtype=torch.int64))
        >>> out = DoubleToFloat()(td)
        >>> out["a"].dtype, out["b"].dtype
        (torch.float32, torch.int64)
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(torch.float64, torch.float32, in_keys, out_keys, in_keys_inv, out_keys_inv)


__all__ = ["DTypeCastTransform", "DoubleToFloat"]
