"""Done-flag completion and partial-reset merging: the exact done semantics of EnvBase."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core._accel.fast_td import (
    batch_size_of,
    build_tensordict,
    device_of,
    entries,
    is_plain,
    only_tensors,
)
from rl_core.keys import DONE, NEXT, RESET, TERMINATED, TRUNCATED


def carried_root_tensors(previous: TensorDict) -> dict[str, torch.Tensor] | None:
    """The root entries of ``previous`` a reset carries over (all but ``"next"`` and
    ``"_reset"``), or None when one of them is not a plain tensor (use the generic path)."""
    source = {}
    for name, value in entries(previous).items():
        if name in (NEXT, RESET):
            continue
        if type(value) is not torch.Tensor:
            return None
        source[name] = value
    return source


def _entries(td: TensorDictBase) -> dict | set:
    return entries(td) if type(td) is TensorDict else set(td.keys())


def complete_done_flags(td: TensorDictBase, levels: list[tuple[str, ...]], env_name: str) -> None:
    """Writes the done flags an env left out, so that ``done == terminated | truncated``.

    With only ``done``: ``terminated = done``, ``truncated = False``. With ``terminated`` and/or
    ``truncated``: ``done`` is their OR, and a missing one is ``done`` minus the other.
    Levels whose three flags are present cost three dict lookups.
    """
    for level in levels:
        sub = td.get(level, None) if level else td
        if sub is None:
            raise KeyError(
                f"{env_name}: the done spec has flags under {level}, but the env wrote no such "
                f"entry (keys: {sorted(map(str, td.keys()))})."
            )
        entries = _entries(sub)
        has_done, has_term, has_trunc = DONE in entries, TERMINATED in entries, TRUNCATED in entries
        if has_done and has_term and has_trunc:
            continue
        term = sub.get(TERMINATED) if has_term else None
        trunc = sub.get(TRUNCATED) if has_trunc else None
        if has_done:
            done = sub.get(DONE)
        elif term is not None and trunc is not None:
            done = term | trunc
        elif term is not None or trunc is not None:
            done = (term if term is not None else trunc).clone()
        else:
            where = f" under {level}" if level else ""
            raise KeyError(
                f"{env_name}: expected done flags{where} ('done', 'terminated' and/or "
                f"'truncated'), got none (keys: {sorted(map(str, sub.keys()))}). Write at least "
                f"'terminated' from _step/_reset."
            )
        if not has_done:
            sub.set(DONE, done)
        if term is None:
            term = done & ~trunc if trunc is not None else done.clone()
            sub.set(TERMINATED, term)
        if trunc is None:
            sub.set(TRUNCATED, done & ~term)


def reset_masks(
    td: TensorDictBase | None, levels: list[tuple[str, ...]], batch_ndim: int
) -> dict[tuple[str, ...], torch.Tensor] | None:
    """The ``"_reset"`` masks present in ``td``, by level; ``None`` when this is a full reset."""
    if td is None:
        return None
    masks: dict[tuple[str, ...], torch.Tensor] = {}
    for level in levels:
        if not level and type(td) is TensorDict:
            mask = entries(td).get(RESET, None)
        else:
            mask = td.get((*level, RESET), None)
        if mask is not None:
            masks[level] = mask
    if not masks or all(_all_set(m) for m in masks.values()):
        return None
    if () not in masks:
        # The root resets when any of its groups does.
        group = next(iter(masks.values()))
        root = group.reshape(*group.shape[:batch_ndim], -1).any(-1, keepdim=True)
        for other in masks.values():
            root = root | other.reshape(*other.shape[:batch_ndim], -1).any(-1, keepdim=True)
        masks[()] = root
    return masks


def _all_set(mask: torch.Tensor) -> bool:
    """``bool(mask.all())``, with fewer torch calls: a one-element mask is read directly (as
    :func:`any_set` reads one) and a CPU bool mask through its numpy view."""
    if mask.numel() == 1:
        return bool(mask)
    if mask.is_cpu and mask.dtype is torch.bool:
        return bool(mask.numpy().all())
    return bool(mask.all())


def _broadcast(mask: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    # mask: [*L, 1]; value: [*L, *rest] -> mask viewed as [*L, 1, ..., 1].
    lead = mask.shape[:-1]
    return mask.reshape(*lead, *([1] * (value.ndim - len(lead))))


def merge_partial_reset(
    previous: TensorDictBase,
    fresh: TensorDictBase,
    masks: dict[tuple[str, ...], torch.Tensor],
    env_name: str,
) -> TensorDictBase:
    """Entries of ``fresh`` where a mask is set, of ``previous`` elsewhere.

    Entries only ``previous`` holds (a policy's recurrent state) are kept; entries only
    ``fresh`` holds are taken whole.
    """
    flat = _merge_flat(previous, fresh, masks)
    if flat is not None:
        return flat
    out = previous.exclude(NEXT, *[(*level, RESET) if level else RESET for level in masks])
    for key in fresh.keys(include_nested=True, leaves_only=True):
        path = (key,) if isinstance(key, str) else key
        value = fresh.get(key)
        old = previous.get(key, None)
        if old is None:
            out.set(key, value)
            continue
        level = max((lv for lv in masks if path[: len(lv)] == lv), key=len)
        if not isinstance(value, torch.Tensor) or not isinstance(old, torch.Tensor):
            raise TypeError(
                f"{env_name}.reset: partial reset of the non-tensor entry {key!r} is not "
                f"supported; reset all sub-envs at once (no '_reset' mask) for such envs."
            )
        out.set(key, torch.where(_broadcast(masks[level], value), value, old))
    return out


def _merge_flat(
    previous: TensorDictBase, fresh: TensorDictBase, masks: dict[tuple[str, ...], torch.Tensor]
) -> TensorDictBase | None:
    """:func:`merge_partial_reset` for plain TensorDicts holding only tensors at the root.

    Returns None (use the generic path) for anything else.
    """
    if len(masks) != 1 or () not in masks:
        return None
    pair = _flat_pair(previous, fresh)
    if pair is None:
        return None
    source, new = pair
    mask = masks[()]
    views = {mask.ndim: mask}  # the mask reshaped for each value rank, made once per rank
    for name, value in new.items():
        old = source.get(name)
        if old is None:
            source[name] = value
            continue
        view = views.get(value.ndim)
        if view is None:
            view = views[value.ndim] = _broadcast(mask, value)
        source[name] = torch.where(view, value, old)
    return build_tensordict(source, batch_size_of(previous), device_of(previous))


def carry_flat(previous: TensorDictBase, fresh: TensorDictBase) -> TensorDictBase | None:
    """``previous.exclude("next", "_reset").update(fresh)`` for plain TensorDicts of tensors.

    Returns None (use the generic path) when either holds anything but tensors at its root,
    e.g. a nested group whose ``"_reset"`` entry must be dropped level by level.
    """
    pair = _flat_pair(previous, fresh)
    if pair is None:
        return None
    source, new = pair
    source.update(new)
    return build_tensordict(source, batch_size_of(previous), device_of(previous))


def _flat_pair(
    previous: TensorDictBase, fresh: TensorDictBase
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]] | None:
    """The root tensors ``previous`` carries over (a new dict) and ``fresh``'s entries, when
    both are plain TensorDicts holding only tensors at the root, on one device; else None."""
    if not is_plain(previous) or not is_plain(fresh) or device_of(previous) != device_of(fresh):
        return None
    source = carried_root_tensors(previous)
    if source is None:
        return None
    new = entries(fresh)
    if not only_tensors(new.values()):
        return None
    return source, new


def any_set(flags: torch.Tensor) -> bool:
    """``bool(flags.any())``, with fewer torch calls: a one-element tensor is read directly and
    a CPU bool tensor through its numpy view."""
    if flags.numel() == 1:
        return bool(flags)
    if flags.is_cpu and flags.dtype is torch.bool:
        return bool(flags.numpy().any())
    return bool(flags.any())
