"""Random one-hot actions written into rows of preallocated blocks: ``rand_action`` with one
torch call.

``OneHot.rand`` draws the indices with ``torch.randint`` and builds the one-hot vectors with two
more torch calls (a comparison and a cast). In a loop that steps a gymnasium env between two
draws, each of those calls is slow (its code is cold every time). :class:`OneHotRows` draws the
same indices with ``random_(0, n)`` on a buffer of the same size (what ``torch.randint`` runs:
the same generator, the same values and the same random state afterwards), reads them with
numpy, sets the 1s in the next row of a zeroed numpy block, and hands out that row's tensor
view, cut from the block with the others in one ``unbind`` call. Every row is written once, so a returned action is never
modified afterwards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from rl_core.specs import OneHot


class OneHotRows:
    """Draws the values of ``spec.rand()`` for an unmasked CPU :class:`~rl_core.specs.OneHot`.

    Args:
        spec: the action spec (batch dims included).

    Keyword Args:
        rows: actions per block. Defaults to 64.
    """

    def __init__(self, spec: OneHot, *, rows: int = 64) -> None:
        self.spec = spec
        self.n = spec.n
        self.shape = tuple(spec.shape)
        # OneHot.rand draws indices of shape (*batch, 1): the same call, into this buffer.
        self.index = torch.empty((*self.shape[:-1], 1), dtype=torch.int64)
        self.index_np = self.index.numpy()
        self.np_dtype = torch.empty(0, dtype=spec.dtype).numpy().dtype
        self.single = len(self.shape) == 1
        self.rows = rows
        self.row = rows  # no block yet: the first draw allocates one

    def _allocate(self) -> None:
        block = np.zeros((self.rows, *self.shape), dtype=self.np_dtype)
        self.block = block
        self.views = torch.from_numpy(block).unbind(0)
        self.row = 0

    def draw(self) -> torch.Tensor:
        """What ``spec.rand()`` gives, from the same random draws."""
        # randint(0, n, size) is random_(0, n) on a new tensor: the same kernel, the same
        # draws; the method call parses its arguments in about half the time.
        self.index.random_(0, self.n)
        i = self.row
        if i == self.rows:
            self._allocate()
            i = 0
        self.row = i + 1
        row = self.block[i]
        if self.single:
            row[self.index_np[0]] = 1
        else:
            np.put_along_axis(row, self.index_np, 1, axis=-1)
        return self.views[i]


def one_hot_rows(spec: Any) -> OneHotRows | None:
    """A :class:`OneHotRows` for ``spec`` where it gives what ``spec.rand()`` gives: a
    :class:`~rl_core.specs.OneHot` itself (a subclass may draw otherwise) on the CPU;
    ``None`` elsewhere. The caller checks that the spec has no mask
    at each draw (a mask can be set in place)."""
    if type(spec) is not OneHot:
        return None
    if spec.device is not None and spec.device.type != "cpu":
        return None
    return OneHotRows(spec)


__all__ = ["OneHotRows", "one_hot_rows"]
