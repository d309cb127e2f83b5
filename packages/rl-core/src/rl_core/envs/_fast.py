"""Fast paths over plain TensorDicts for the per-step work of EnvBase and rollout.

Each function gives the same result as the generic tensordict call it replaces, and falls back
to that call for anything but a plain ``TensorDict`` of tensors.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs._flags import carried_root_tensors


def _fast_get(td: TensorDictBase, path: tuple[str, ...]) -> Any:
    """``td.get(path)`` through the entry dicts of plain TensorDicts (a few times faster)."""
    node: Any = td
    for name in path:
        if type(node) is not TensorDict:
            return td.get(path)
        node = node._tensordict[name]
    return node


def _fast_set(td: TensorDictBase, key: str, value: Any) -> None:
    """``td.set(key, value)``; a tensor or TensorDict whose batch dims and device already fit a
    plain TensorDict skips the validation and key parsing of ``set``."""
    if type(td) is TensorDict and type(key) is str:
        batch, device = td._batch_size, td._device
        kind = type(value)
        if (
            (kind is TensorDict or (kind is torch.Tensor and not value.is_nested))
            and value.shape[: len(batch)] == batch
            and (device is None or value.device == device)
        ):
            td._set_str(key, value, inplace=False, validated=True)
            return
    td.set(key, value)


def _carry_flat(previous: TensorDictBase, fresh: TensorDictBase) -> TensorDictBase | None:
    """``previous.exclude("next", "_reset").update(fresh)`` for plain TensorDicts of tensors.

    Returns None (use the generic path) when either holds anything but tensors at its root,
    e.g. a nested group whose ``"_reset"`` entry must be dropped level by level.
    """
    if (
        type(previous) is not TensorDict
        or type(fresh) is not TensorDict
        or previous.device != fresh.device
    ):
        return None
    source = carried_root_tensors(previous)
    if source is None:
        return None
    for name, value in fresh._tensordict.items():
        if type(value) is not torch.Tensor:
            return None
        source[name] = value
    return TensorDict._new_unsafe(
        source=source, batch_size=previous.batch_size, device=previous.device, nested=False
    )


def any_set(flags: torch.Tensor) -> bool:
    """``bool(flags.any())``, with fewer torch calls: a one-element tensor is read directly and
    a CPU bool tensor through its numpy view."""
    if flags.numel() == 1:
        return bool(flags)
    if flags.is_cpu and flags.dtype is torch.bool:
        return bool(flags.numpy().any())
    return bool(flags.any())
