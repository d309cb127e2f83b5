"""Argument checks shared by the distributions.

Checks that read tensor values (``low < high``, a mask row without valid actions) force a
device synchronisation, so they run only when argument validation is on: the
``validate_args`` argument, or torch's default
(:meth:`torch.distributions.Distribution.set_default_validate_args`). Checks on shapes, types
and Python numbers always run.
"""

from __future__ import annotations

from numbers import Real

import torch
from torch import distributions as D


def validating(validate_args: bool | None) -> bool:
    """Whether value checks run: ``validate_args``, or torch's default when it is ``None``."""
    return D.Distribution._validate_args if validate_args is None else validate_args


def check_event_dims(owner: str, event_dims: int, like: torch.Tensor, name: str) -> None:
    """Raises unless ``0 <= event_dims <= like.dim()``."""
    if isinstance(event_dims, bool) or not isinstance(event_dims, int):
        raise TypeError(f"{owner}: event_dims must be an int, got {type(event_dims).__name__}.")
    if not 0 <= event_dims <= like.dim():
        raise ValueError(
            f"{owner}: event_dims must be between 0 and {name}.dim()={like.dim()}, got "
            f"{event_dims}. Pass event_dims=1 for a vector action, or reshape {name}."
        )


def check_ordered(
    owner: str,
    low: float | torch.Tensor,
    high: float | torch.Tensor,
    *,
    validate: bool,
) -> None:
    """Raises unless ``low < high`` everywhere (tensor values only when ``validate``)."""
    if isinstance(low, Real) and isinstance(high, Real):
        ordered = low < high
    elif validate:
        ordered = bool((torch.as_tensor(low) < torch.as_tensor(high)).all())
    else:
        return
    if not ordered:
        shown = [v.tolist() if isinstance(v, torch.Tensor) else v for v in (low, high)]
        raise ValueError(
            f"{owner}: expected low < high everywhere, got low={shown[0]} and high={shown[1]}. "
            f"Swap or widen the bounds."
        )


def bounds_like(
    owner: str,
    low: float | torch.Tensor,
    high: float | torch.Tensor,
    like: torch.Tensor,
    name: str,
    *,
    validate: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``low`` and ``high`` as tensors of ``like``'s dtype and device that broadcast to it."""
    check_ordered(owner, low, high, validate=validate)
    bounds = []
    for bound_name, bound in (("low", low), ("high", high)):
        tensor = torch.as_tensor(bound, dtype=like.dtype, device=like.device)
        try:
            shape = torch.broadcast_shapes(tensor.shape, like.shape)
        except RuntimeError:
            shape = None
        if shape != like.shape:
            raise ValueError(
                f"{owner}: {bound_name} of shape {tuple(tensor.shape)} does not broadcast to "
                f"{name} of shape {tuple(like.shape)}. Pass a float or a tensor of the "
                f"action's shape."
            )
        bounds.append(tensor)
    return bounds[0], bounds[1]
