"""TED2Nested and Nested2TED: TED rows to one nested tensor per entry (a component per
trajectory) and back."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_buffers.datasets.ted_flat import TED2Flat

__all__ = ["Nested2TED", "TED2Nested"]


class TED2Nested(TED2Flat):
    """Splits TED rows ``[N]`` into trajectories: a TensorDict ``[trajectories]`` whose every
    entry is a nested tensor with one component ``[steps, ...]`` per trajectory.

    A trajectory ends after each row whose ``done_key`` entry is True, and at the last row.
    :class:`Nested2TED` joins the components back into the same rows. Keyword arguments are
    :class:`TED2Flat`'s (the rows are read rolled by :attr:`shift` the same way).

    Raises:
        KeyError: (at call) the data has no ``done_key`` entry.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import Nested2TED, TED2Nested
        >>> done = torch.tensor([False, True, False, False, True])
        >>> ted = TensorDict({"observation": torch.arange(5.0), "next": {"done": done}}, [5])
        >>> nested = TED2Nested()(ted)
        >>> nested.batch_size, [t.shape[0] for t in nested["observation"].unbind(0)]
        (torch.Size([2]), [2, 3])
        >>> bool((Nested2TED()(nested) == ted).all())
        True
    """

    def __call__(self, data: TensorDictBase, path: str | Path | None = None) -> TensorDictBase:
        """The trajectories of ``data``; with ``path``, also memory-mapped under ``path``."""
        rows = self._rows(data)
        ends = rows.get(self.done_key).reshape(rows.shape[0], -1).any(-1).clone()
        if ends.numel():
            ends[-1] = True
        lengths = torch.diff(ends.nonzero().squeeze(-1), prepend=torch.tensor([-1])).tolist()
        nested = TensorDict(batch_size=[len(lengths)])
        for key, value in rows.items(include_nested=True, leaves_only=True):
            nested.set(key, _nest(list(torch.split(value, lengths))))
        if path is not None:
            nested.memmap(prefix=Path(path), copy_existing=True, existsok=True)
        return nested


class Nested2TED:
    """Joins :class:`TED2Nested`'s trajectories back into TED rows.

    Raises:
        ValueError: (at call) the entries do not all split into the same trajectory lengths.
    """

    def __call__(self, data: TensorDictBase, out: TensorDictBase | None = None) -> TensorDictBase:
        """The TED rows; with ``out`` (a TensorDict of the same rows), written into it."""
        lengths: list[int] | None = None
        columns: dict[Any, Tensor] = {}
        for key, value in data.items(include_nested=True, leaves_only=True):
            pieces = value.unbind(0)
            these = [piece.shape[0] for piece in pieces]
            if lengths is None:
                lengths = these
            elif these != lengths:
                raise ValueError(
                    f"Nested2TED: expected every entry to have trajectories of lengths "
                    f"{lengths} (the first entry's), got {these} at {key!r}."
                )
            columns[key] = torch.cat([piece.contiguous() for piece in pieces])
        rows = TensorDict(columns, batch_size=[sum(lengths or [])])
        if out is not None:
            out.update_(rows)
            return out
        return rows


def _nest(pieces: list[Tensor]) -> Tensor:
    with warnings.catch_warnings():  # (torch calls strided nested tensors a prototype;
        # tensordict memory-maps that layout)
        warnings.filterwarnings("ignore", "The PyTorch API of nested tensors")
        return torch.nested.nested_tensor(pieces, layout=torch.strided)
