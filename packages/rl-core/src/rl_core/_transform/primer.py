"""TensorDictPrimer: entries (recurrent states, counters) added at reset and carried on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core._transform.transform import Transform
from rl_core.keys import NEXT
from rl_core.specs import Composite, TensorSpec


class TensorDictPrimer(Transform):
    """Adds entries described by specs: written at reset, carried from step to step.

    Each entry is an observation and a state of the env: reset writes it (zeros filled with
    ``default_value``, or random values from the spec), and a step copies it to ``"next"``
    unless the env wrote it there, taking the policy's ``("next", key)`` when the policy wrote
    one (a recurrent policy's next hidden state) and the root value otherwise.

    Recurrent modules build theirs: ``env.append_transform(lstm.make_tensordict_primer())``
    (see :meth:`rl_core.modules.LSTMModule.make_tensordict_primer`).

    Args:
        primers: a Composite (or a dict of key to spec) of the entries, shapes without the
            env batch dims; or ``None`` to give them as keyword arguments.
        random: draw reset values from the specs instead of ``default_value``.
        default_value: the reset value.
        **kwargs: entries as ``name=spec``. With none at all the primer adds nothing (as
            TorchRL's ``TensorDictPrimer()``).

    Raises:
        ValueError: both ``primers`` and keyword specs.
        TypeError: ``primers`` is neither a Composite nor a dict of specs.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core import Unbounded
        >>> t = TensorDictPrimer(hidden=Unbounded(shape=(2, 8)))
        >>> t(TensorDict(batch_size=[5]))["hidden"].shape
        torch.Size([5, 2, 8])
    """

    def __init__(
        self,
        primers: Composite | Mapping[Any, TensorSpec] | None = None,
        *,
        random: bool = False,
        default_value: float = 0.0,
        **kwargs: TensorSpec,
    ) -> None:
        if primers is not None and kwargs:
            raise ValueError("TensorDictPrimer: give primers or keyword specs, not both.")
        if primers is None:
            primers = Composite(kwargs)
        elif isinstance(primers, Mapping) and not isinstance(primers, Composite):
            if not all(isinstance(spec, TensorSpec) for spec in primers.values()):
                raise TypeError(
                    "TensorDictPrimer: expected a dict of TensorSpec values, got value types "
                    f"{sorted({type(s).__name__ for s in primers.values()})}."
                )
            primers = Composite(dict(primers))
        if not isinstance(primers, Composite):
            raise TypeError(
                f"TensorDictPrimer: primers must be a Composite, got {type(primers).__name__}."
            )
        super().__init__()
        self.out_keys = list(primers.keys(include_nested=True, leaves_only=True))
        self.primers = primers
        self.random = random
        self.default_value = default_value
        self.__dict__["_expanded"] = None

    def _spec_for(self, batch_size: torch.Size, device: Any) -> Composite:
        expanded = self._expanded
        if expanded is None or expanded.shape != batch_size:
            expanded = Composite(shape=batch_size, device=device)
            for key in self.out_keys:
                leaf = self.primers[key]
                leaf = leaf.to(device) if device is not None else leaf
                expanded[key] = leaf.expand(*batch_size, *leaf.shape)
            self.__dict__["_expanded"] = expanded
        return expanded

    def _values(self, batch_size: torch.Size, device: Any) -> TensorDictBase:
        spec = self._spec_for(batch_size, device)
        if self.random:
            return spec.rand()
        values = spec.zero()
        if self.default_value != 0:
            values.apply_(lambda t: t.fill_(self.default_value))
        return values

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        values = self._values(tensordict_reset.batch_size, tensordict_reset.device)
        for key in self.out_keys:
            tensordict_reset.set(key, values.get(key))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key in self.out_keys:
            if next_tensordict.get(key, None) is not None:
                continue
            path = (key,) if isinstance(key, str) else key
            value = tensordict.get((NEXT, *path), None)
            if value is None:
                value = tensordict.get(key, None)
            if value is None:
                raise KeyError(
                    f"TensorDictPrimer: expected {key!r} in the TensorDict given to step; reset "
                    f"writes it. Reset the env first."
                )
            next_tensordict.set(key, value)
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        missing = [k for k in self.out_keys if tensordict.get(k, None) is None]
        if missing:
            values = self._values(tensordict.batch_size, tensordict.device)
            for key in missing:
                tensordict.set(key, values.get(key))
        return tensordict

    def _add(self, spec: Composite) -> Composite:
        expanded = self._spec_for(spec.shape, spec.device)
        known = spec.keys(include_nested=True, leaves_only=True)
        for key in self.out_keys:
            if key in known:
                raise KeyError(
                    f"TensorDictPrimer: the env already has an entry {key!r}; rename the primer."
                )
            spec[key] = expanded[key].clone()
        return spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._add(observation_spec)

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        return self._add(state_spec)

    def extra_repr(self) -> str:
        return f"keys={self.out_keys}, random={self.random}"


__all__ = ["TensorDictPrimer"]
