"""Spec plumbing for EnvBase: defaults, validation when a spec is set, key lists."""

from __future__ import annotations

from typing import Any

import torch

from rl_core.keys import DONE, DONE_KEYS, RESET, TERMINATED, TRUNCATED, NestedKey, key_path
from rl_core.specs import Categorical, Composite, TensorSpec, Unbounded


def default_reward_spec(batch_size: torch.Size, device: torch.device | None) -> Unbounded:
    return Unbounded(shape=(*batch_size, 1), device=device, dtype=torch.float32)


def default_done_flag(batch_size: torch.Size, device: torch.device | None) -> Categorical:
    return Categorical(2, shape=(*batch_size, 1), device=device, dtype=torch.bool)


def default_done_spec(batch_size: torch.Size, device: torch.device | None) -> Composite:
    flag = default_done_flag(batch_size, device)
    return Composite({name: flag.clone() for name in DONE_KEYS}, shape=batch_size, device=device)


def leaf_keys(spec: Composite) -> list[NestedKey]:
    return list(spec.keys(include_nested=True, leaves_only=True))


def check_batch_shape(env_name: str, what: str, spec: TensorSpec, batch_size: torch.Size) -> None:
    """A spec set on an env must lead with the env's batch size."""
    shape = spec.shape
    if tuple(shape[: len(batch_size)]) != tuple(batch_size):
        raise ValueError(
            f"{env_name}.{what}: expected a spec whose shape starts with the env batch size "
            f"{tuple(batch_size)}, got shape {tuple(shape)}. Specs carry the batch dims: build it "
            f"with shape=({', '.join(map(str, batch_size))}{', ' if batch_size else ''}...), or "
            f"call spec.expand(*batch_size, *spec.shape)."
        )


def wrap_leaf(
    env_name: str, what: str, spec: Any, default_key: str, batch_size: torch.Size, device
) -> Composite:
    """A leaf spec set as ``env.<what>`` becomes ``Composite({default_key: spec})``."""
    if spec is None:
        return Composite(shape=batch_size, device=device)
    if isinstance(spec, Composite):
        check_batch_shape(env_name, what, spec, batch_size)
        if tuple(spec.shape) != tuple(batch_size):
            raise ValueError(
                f"{env_name}.{what}: expected a Composite with batch shape {tuple(batch_size)} "
                f"(the env batch size), got {tuple(spec.shape)}."
            )
        return spec if device is None else spec.to(device)
    if isinstance(spec, TensorSpec):
        check_batch_shape(env_name, what, spec, batch_size)
        if device is not None:
            spec = spec.to(device)
        return Composite({default_key: spec}, shape=batch_size, device=device)
    raise TypeError(
        f"{env_name}.{what}: expected a TensorSpec or a Composite, got {type(spec).__name__}."
    )


def complete_done_spec(spec: Composite) -> Composite:
    """Every level that has a done flag gets all three: done, terminated, truncated.

    A missing flag is a copy of one that is there, so ``done = terminated | truncated`` can
    always be written.
    """
    levels: dict[tuple[str, ...], dict[str, TensorSpec]] = {}
    for key in leaf_keys(spec):
        path = key_path(key)
        if path[-1] in DONE_KEYS:
            levels.setdefault(path[:-1], {})[path[-1]] = spec[key]
    for level, present in levels.items():
        template = present.get(DONE) or present.get(TERMINATED) or present.get(TRUNCATED)
        for name in DONE_KEYS:
            if name not in present:
                spec[(*level, name)] = template.clone()
    return spec


def done_levels(spec: Composite) -> list[tuple[str, ...]]:
    """The levels (``()`` for the root, ``("agents",)`` for a group) that hold done flags."""
    seen: dict[tuple[str, ...], None] = {}
    for key in leaf_keys(spec):
        path = key_path(key)
        if path[-1] in DONE_KEYS:
            seen.setdefault(path[:-1], None)
    return list(seen)


def reset_keys(spec: Composite) -> list[NestedKey]:
    out: list[NestedKey] = []
    for level in done_levels(spec):
        out.append((*level, RESET) if level else RESET)
    return out


__all__ = [
    "check_batch_shape",
    "complete_done_spec",
    "default_done_flag",
    "default_done_spec",
    "default_reward_spec",
    "done_levels",
    "leaf_keys",
    "reset_keys",
    "wrap_leaf",
]
