"""Loading a TensorDict of parameters into a module, planned once (private).

``TensorDictBase.to_module`` walks the TensorDict and the module tree on every call, which
costs far more than the small networks of a loss take to run. A :class:`SwapPlan` walks them
once: it records, for every leaf of the TensorDict, the ``_parameters`` or ``_buffers`` dict
of the submodule that holds it and the entry's name. Loading is then one dict assignment
per leaf, and restoring one more. The plan holds the leaf tensors themselves, so it is only
valid while the TensorDict keeps the same leaf objects; :class:`SwapPlanCache` (held by the
loss) is cleared whenever they may have been replaced.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

# A plan: (dict of the owning submodule, entry name, tensor to load) per leaf.
_Entry = tuple[dict[str, Any], str, torch.Tensor]


def build_plan(module: nn.Module, params: TensorDictBase) -> list[_Entry] | None:
    """The entries that load ``params`` into ``module``; ``None`` if some leaf has no slot.

    A leaf at ``("a", "0", "weight")`` goes to ``module.a[0]._parameters["weight"]`` (or
    ``_buffers``), the slot ``to_module`` fills. Every parameter and buffer slot of the module
    must receive a leaf, as ``to_module`` does; otherwise ``None`` (use ``to_module``).
    """
    entries: list[_Entry] = []
    filled: set[tuple[int, str]] = set()
    for path, leaf in params.items(include_nested=True, leaves_only=True):
        path = (path,) if isinstance(path, str) else path
        owner = module
        for part in path[:-1]:
            owner = owner._modules.get(part)
            if owner is None:
                return None
        name = path[-1]
        if name in owner._parameters:
            slots = owner._parameters
        elif name in owner._buffers:
            slots = owner._buffers
        else:
            return None
        if not isinstance(leaf, torch.Tensor):
            return None
        entries.append((slots, name, leaf))
        filled.add((id(slots), name))
    for sub in module.modules():
        for slots in (sub._parameters, sub._buffers):
            for name, value in slots.items():
                if value is not None and (id(slots), name) not in filled:
                    return None
    return entries


@contextmanager
def loaded(entries: list[_Entry], module: nn.Module) -> Iterator[nn.Module]:
    """Puts the planned tensors into their slots for the block, then restores the old ones."""
    saved = [slots[name] for slots, name, _ in entries]
    for slots, name, leaf in entries:
        slots[name] = leaf
    try:
        yield module
    finally:
        for (slots, name, _), old in zip(entries, saved, strict=True):
            slots[name] = old


class SwapPlanCache:
    """Plans per ``(network name, parameter TensorDict)``, holding the TensorDicts alive so
    that an ``id`` is never reused while its plan is kept. At most ``size`` plans."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self.plans: dict[tuple[str, int], tuple[TensorDictBase, list[_Entry] | None]] = {}

    def get(self, name: str, module: nn.Module, params: TensorDictBase) -> list[_Entry] | None:
        key = (name, id(params))
        hit = self.plans.get(key)
        if hit is not None and hit[0] is params:
            return hit[1]
        if len(self.plans) >= self.size:
            self.plans.clear()
        plan = build_plan(module, params)
        self.plans[key] = (params, plan)
        return plan

    def clear(self) -> None:
        self.plans.clear()
