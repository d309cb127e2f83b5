"""The records ``spec.space`` returns: which values a spec allows, as TorchRL names them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Box:
    """Base of the records ``spec.space`` returns."""


@dataclass(frozen=True, eq=False)
class ContinuousBox(Box):
    """Values between ``low`` and ``high`` (tensors of the spec's shape, the spec's own)."""

    low: torch.Tensor
    high: torch.Tensor


@dataclass(frozen=True)
class CategoricalBox(Box):
    """``n`` categories: the integers ``0 .. n - 1`` (or ``n`` one-hot positions)."""

    n: int


class DiscreteBox(CategoricalBox):
    """TorchRL's former name of :class:`CategoricalBox`."""


@dataclass(frozen=True)
class BinaryBox(Box):
    """``n`` entries, each 0 or 1."""

    n: int


@dataclass(frozen=True)
class BoxList(Box):
    """One box per sub-action, for :class:`MultiCategorical` and :class:`MultiOneHot`."""

    boxes: tuple[Box, ...]

    def __iter__(self) -> Iterator[Box]:
        return iter(self.boxes)

    def __len__(self) -> int:
        return len(self.boxes)

    @staticmethod
    def from_nvec(nvec: torch.Tensor) -> Box:
        """A :class:`CategoricalBox` for a 0-dim count, else a list over the last dim."""
        if nvec.ndim == 0:
            return CategoricalBox(int(nvec))
        return BoxList(tuple(BoxList.from_nvec(n) for n in nvec.unbind(-1)))
