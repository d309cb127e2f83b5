"""The rule that derives a typed config dataclass from a constructor's signature.

rl_envs.configs applies the same rule (``config_of``) to its transforms and envs; siblings may
not import one another, so each package that derives configs holds the rule (rl-core, where
one copy would serve all, is at its size cap).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import field, make_dataclass
from typing import Any, Optional

MISSING = "???"  # OmegaConf's mandatory value
_PLAIN_TYPES: dict[str, Any] = {"int": int, "float": float, "bool": bool, "str": str}
_IGNORED = {"None", "Tensor", "torch.Tensor"}


def field_type(annotation: Any) -> Any:
    """``int``, ``float``, ``bool``, ``str`` or their ``| None`` forms (a ``| Tensor`` part is
    dropped: a config writes numbers), which OmegaConf checks; anything else is ``Any``."""
    if isinstance(annotation, type):
        text = annotation.__name__
    else:
        text = str(annotation).replace("typing.", "")
    parts = [p.strip() for p in text.split("|")]
    rest = [p for p in parts if p not in _IGNORED]
    if len(rest) != 1 or rest[0] not in _PLAIN_TYPES:
        return Any
    plain = _PLAIN_TYPES[rest[0]]
    return Optional[plain] if "None" in parts else plain  # noqa: UP045


def _number_tuple(value: Any) -> bool:
    return isinstance(value, tuple) and bool(value) and all(type(v) in (int, float) for v in value)


def config_of(
    target: Callable[..., Any],
    name: str,
    target_path: str,
    *,
    partial: bool = False,
    skip: tuple[str, ...] = (),
    doc: str | None = None,
) -> type:
    """A typed config dataclass ``name`` whose fields are ``target``'s parameters.

    A parameter with a plain default (None, a bool, number or string) becomes a field with that
    default, a tuple of numbers (Adam's ``betas``, a channel multiplier list) a list of ints or floats; a required parameter is a mandatory
    field (``???``), except in a partial config, where the required parameters are what the
    caller passes (a loss's networks, an optimizer's parameters) and are left out. ``*args``,
    ``**kwargs``, private and ``skip`` parameters and those whose default a YAML file cannot
    write (a key tuple, a class, a dtype) are left out: the target's default applies.

    Args:
        target: the class or builder the config calls.
        name: the config class's name.
        target_path: the dotted path written in ``_target_``.
        partial: whether the config is partial (``instantiate`` returns a callable).
        skip: parameters not to make fields of.
        doc: the config's docstring (default: names the target).

    Returns:
        The dataclass.

    Examples:
        >>> import torch
        >>> cfg = config_of(torch.optim.RMSprop, "RMSpropConfig", "torch.optim.RMSprop", partial=True)
        >>> cfg().alpha, cfg()._target_
        (0.99, 'torch.optim.RMSprop')
    """
    fields: list[tuple[str, Any, Any]] = []
    for param in inspect.signature(target).parameters.values():
        if (
            param.name.startswith("_")
            or param.name in skip
            or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
        ):
            continue
        default = param.default
        kind = field_type(param.annotation)
        if default is param.empty:
            if partial:
                continue
            spec = field(default=MISSING)
        elif _number_tuple(default):
            spec = field(default_factory=lambda d=default: list(d))
            kind = list[int] if all(type(v) is int for v in default) else list[float]
        elif default is None or type(default) in (bool, int, float, str):
            if isinstance(default, float) and math.isnan(default):
                continue
            spec = field(default=default)
            if kind is Any and default is not None:
                kind = type(default)
        else:
            continue
        fields.append((param.name, kind, spec))
    fields.append(("_target_", str, field(default=target_path)))
    fields.append(("_convert_", str, field(default="all")))
    if partial:
        fields.append(("_partial_", bool, field(default=True)))
    text = doc or f":class:`{target_path}` (fields: its arguments; derived by ``config_of``)."
    return make_dataclass(
        name, fields, namespace={"__doc__": text, "__module__": "rl_objectives.configs"}
    )
