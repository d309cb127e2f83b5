"""Helpers shared by the trainer and its hooks."""

from __future__ import annotations

import numbers

import torch
from tensordict import TensorDictBase

#: The mask a collector may add to mark the valid steps of a padded batch.
COLLECTOR_MASK = ("collector", "mask")


def check_positive_int(owner: str, name: str, value: object) -> int:
    """Returns ``value`` if it is a positive int; raises ``ValueError`` naming ``owner``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}.")
    return int(value)


def valid_mask(batch: TensorDictBase) -> torch.Tensor | None:
    """The ``("collector", "mask")`` entry of ``batch``, or ``None`` if it has none."""
    return batch.get(COLLECTOR_MASK, None)


def count_frames(batch: TensorDictBase) -> int:
    """The number of valid steps in ``batch``: its mask's sum, else its number of elements."""
    if not isinstance(batch, TensorDictBase):
        raise TypeError(
            f"Trainer: the collector must yield TensorDicts, got {type(batch).__name__}."
        )
    mask = valid_mask(batch)
    return int(mask.sum().item()) if mask is not None else batch.numel()


def sum_loss_terms(
    owner: str, losses: TensorDictBase
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Returns the sum of the ``loss*`` entries and every scalar entry, detached, to log.

    Raises:
        TypeError: ``losses`` is not a TensorDict.
        ValueError: no entry starts with ``"loss"``, or a ``loss*`` entry is not a scalar.
    """
    if not isinstance(losses, TensorDictBase):
        raise TypeError(
            f"Trainer: {owner} must return a TensorDict of loss terms, got {type(losses).__name__}."
        )
    names = [name for name in losses.keys() if isinstance(name, str) and name.startswith("loss")]
    if not names:
        raise ValueError(
            f"Trainer: {owner} returned no entry whose name starts with 'loss' (got "
            f"{sorted(losses.keys())}); the trainer minimises the sum of those entries."
        )
    for name in names:
        if losses.get(name).numel() != 1:
            raise ValueError(
                f"Trainer: loss term {name!r} of {owner} must be a scalar, got shape "
                f"{tuple(losses.get(name).shape)}. Reduce it in the loss (reduction='mean')."
            )
    total = sum(losses.get(name).reshape(()) for name in names)
    logged = {
        name: value.detach().reshape(()).float()
        for name, value in losses.items()
        if isinstance(name, str) and isinstance(value, torch.Tensor) and value.numel() == 1
    }
    return total, logged
