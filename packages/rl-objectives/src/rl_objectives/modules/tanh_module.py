"""TanhModule: a deterministic policy's output squashed by tanh into its action bounds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase

from rl_core import Composite
from rl_core.keys import NestedKey


def _bound(value: Any, spec: Any, name: str, key: NestedKey) -> torch.Tensor:
    """``low``/``high`` from the argument, else the spec's (``-1``/``1`` without either);
    both given must agree."""
    from_spec = None if spec is None else getattr(spec, name, None)
    if spec is not None and from_spec is None:
        raise TypeError(
            f"TanhModule: the spec of {key!r} must be bounded (have {name}), got "
            f"{type(spec).__name__}."
        )
    if value is None:
        return torch.as_tensor(-1.0 if name == "low" else 1.0) if from_spec is None else from_spec
    value = torch.as_tensor(value, dtype=torch.get_default_dtype())
    if from_spec is not None and not torch.equal(value.expand_as(from_spec), from_spec.to(value)):
        raise ValueError(
            f"TanhModule: {name}={value.tolist()} does not match the spec of {key!r} "
            f"({name}={from_spec.tolist()}); give one of them."
        )
    return value


class TanhModule(TensorDictModuleBase):
    """Maps each ``in_keys`` entry ``x`` to ``low + (high - low) * (tanh(x) + 1) / 2`` at the
    matching ``out_keys`` entry (TorchRL's ``TanhModule``): a deterministic policy's output in
    the action bounds.

    Args:
        in_keys: the network outputs.
        out_keys: the bounded outputs. Defaults to ``in_keys``.
        spec: a bounded spec (every output), or a :class:`~rl_core.Composite` holding one per
            ``out_keys`` entry (keyword-only); its ``low``/``high`` are the bounds.
        low: the lower bound, a float or a tensor (keyword-only). Defaults to the spec's, else
            -1.
        high: the upper bound (keyword-only). Defaults to the spec's, else 1.
        clamp: keep ``tanh(x)`` one float resolution away from -1 and 1, so the bounds are
            never reached (keyword-only). Defaults to False.

    Raises:
        ValueError: ``out_keys`` differ in length from ``in_keys``; ``high < low``; ``low`` or
            ``high`` disagrees with the spec.
        TypeError: a spec has no bounds.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> m = TanhModule(["param"], ["action"], low=-2.0, high=2.0)
        >>> m(TensorDict(param=torch.tensor([0.0, 100.0])))["action"].tolist()
        [0.0, 2.0]
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey] | None = None,
        *,
        spec: Any = None,
        low: Any = None,
        high: Any = None,
        clamp: bool = False,
    ) -> None:
        super().__init__()
        self.in_keys = list(in_keys)
        self.out_keys = list(self.in_keys if out_keys is None else out_keys)
        if len(self.out_keys) != len(self.in_keys):
            raise ValueError(
                f"TanhModule: expected one out_key per in_key, got out_keys={self.out_keys} for "
                f"in_keys={self.in_keys}."
            )
        self.clamp = bool(clamp)
        self._bounds: list[tuple[str, str]] = []
        for i, out_key in enumerate(self.out_keys):
            leaf = spec.get(out_key, None) if isinstance(spec, Composite) else spec
            lo = _bound(low, leaf, "low", out_key)
            hi = _bound(high, leaf, "high", out_key)
            if (hi < lo).any():
                raise ValueError(
                    f"TanhModule: high must be >= low for {out_key!r}, got low={lo.tolist()} and "
                    f"high={hi.tolist()}."
                )
            names = (f"_low_{i}", f"_high_{i}")
            self.register_buffer(names[0], lo.clone())
            self.register_buffer(names[1], hi.clone())
            self._bounds.append(names)
        self.spec = spec

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key, (lo_name, hi_name) in zip(
            self.in_keys, self.out_keys, self._bounds, strict=True
        ):
            y = tensordict.get(in_key).tanh()
            if self.clamp:
                eps = torch.finfo(y.dtype).resolution
                y = y.clamp(-1 + eps, 1 - eps)
            low, high = getattr(self, lo_name), getattr(self, hi_name)
            tensordict.set(out_key, low + (high - low) * (y + 1) / 2)
        return tensordict


__all__ = ["TanhModule"]
