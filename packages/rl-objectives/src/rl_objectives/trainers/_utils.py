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
