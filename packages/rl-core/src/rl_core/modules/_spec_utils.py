"""Helpers that put module outputs into their specs (the ``safe=True`` projection)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core.keys import NestedKey
from rl_core.specs import Composite, TensorSpec


def as_composite(
    spec: TensorSpec | None, out_keys: Sequence[NestedKey], where: str
) -> Composite | None:
    """Returns ``spec`` as a Composite keyed by output key (a leaf spec goes to ``out_keys[0]``).

    Raises:
        TypeError: ``spec`` is not a spec.
    """
    if spec is None or isinstance(spec, Composite):
        return spec
    if not isinstance(spec, TensorSpec):
        raise TypeError(
            f"{where}: expected spec to be a TensorSpec (e.g. Bounded) or a Composite keyed by "
            f"output key, got {type(spec).__name__}."
        )
    return Composite({out_keys[0]: spec})


def leaf_spec(spec: TensorSpec, key: NestedKey, where: str) -> TensorSpec:
    """The spec of the entry ``key``: ``spec[key]`` for a Composite, else ``spec`` itself.

    Raises:
        KeyError: the Composite has no entry ``key``.
    """
    if isinstance(spec, Composite):
        if key not in spec.keys(include_nested=True):
            raise KeyError(
                f"{where}: the spec has no entry {key!r}; its keys are "
                f"{spec.keys(include_nested=True)}. Pass the action spec or set action_key."
            )
        return spec[key]
    return spec


def expand_to(spec: TensorSpec, shape: torch.Size) -> TensorSpec:
    """``spec`` with the leading dims of ``shape`` that it lacks prepended.

    ``spec.shape`` holds the env's batch dims; data may carry more (time, collector workers).
    """
    extra = len(shape) - spec.ndim
    if extra <= 0:
        return spec
    return spec.expand(*shape[:extra], *spec.shape)


def project_into(tensordict: TensorDictBase, spec: Composite) -> None:
    """Projects, in place, every entry of ``tensordict`` that ``spec`` describes.

    Entries that the TensorDict lacks are skipped.
    """
    for key in spec.keys(include_nested=True, leaves_only=True):
        leaf = spec[key]
        if leaf is None:
            continue
        value = tensordict.get(key, None)
        if value is None:
            continue
        tensordict.set(key, expand_to(leaf, value.shape).project(value))
