"""TED2Flat and Flat2TED: TED rows to a compact flat layout and back."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_buffers.storages.checkpointers import compact_ted, expand_ted

__all__ = ["Flat2TED", "TED2Flat"]

_DONE_KEYS = ("done", "truncated", "terminated")
_REWARD_KEYS = ("reward",)
_NEXT_KEPT = "next_kept"  # (sub-TensorDict of the flat layout: the kept ("next", key) rows)
_KEPT = "kept"  # (the mask of those rows)


class TED2Flat:
    """Converts TED rows (``[N]``, each step's ``("next", key)`` repeating the next step's
    root ``key``) into a flat layout without the repeated rows.

    For every entry ``("next", key)`` whose ``key`` is also at the root (and is not a done
    or reward entry), the row of step ``t`` is kept only where it differs from root row
    ``t + 1``: episode ends and the last row. The result is a TensorDict of batch size
    ``[]`` holding the root entries (``N`` rows), ``"next"`` with the entries that are never
    compacted (done and reward), ``"next_kept"`` with the kept rows of the compacted ones
    and ``"kept"`` (their mask, ``N`` bools); ``shift_key`` and ``is_full_key`` hold
    :attr:`shift` and :attr:`is_full`. :class:`Flat2TED` rebuilds the rows exactly.

    The rows are read in storage order rolled by :attr:`shift` (``-shift`` rows), so that a
    full circular storage whose oldest row is at ``shift`` is flattened oldest first.

    Args:
        done_key: the done entry. Defaults to ``("next", "done")``; it must be in the data.
        shift_key: where :attr:`shift` is recorded. Defaults to ``"shift"``.
        is_full_key: where :attr:`is_full` is recorded. Defaults to ``"is_full"``.
        done_keys: leaf names never compacted. Defaults to ``("done", "truncated",
            "terminated")``.
        reward_keys: leaf names never compacted. Defaults to ``("reward",)``.

    Raises:
        KeyError: (at call) the data has no ``done_key`` entry.
        TypeError: (at call) the data is not a TensorDict with one batch dim.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import Flat2TED, TED2Flat
        >>> obs = torch.arange(5.0)
        >>> done = torch.tensor([False, True, False, False, True])
        >>> ted = TensorDict({"observation": obs[:4], "next": {"observation": obs[1:],
        ...     "done": done[:4]}}, [4])
        >>> flat = TED2Flat()(ted)
        >>> flat["next_kept", "next", "observation"].tolist()
        [4.0]
        >>> bool((Flat2TED()(flat) == ted).all())
        True
    """

    shift: int = 0
    is_full: bool = False

    def __init__(
        self,
        done_key: Any = ("next", "done"),
        shift_key: Any = "shift",
        is_full_key: Any = "is_full",
        done_keys: Sequence[Any] = _DONE_KEYS,
        reward_keys: Sequence[Any] = _REWARD_KEYS,
    ) -> None:
        self.done_key = done_key
        self.shift_key = shift_key
        self.is_full_key = is_full_key
        self.done_keys = tuple(_leaf(key) for key in done_keys)
        self.reward_keys = tuple(_leaf(key) for key in reward_keys)

    def __call__(self, data: TensorDictBase, path: str | Path | None = None) -> TensorDictBase:
        """The flat layout of ``data``; with ``path``, also memory-mapped under ``path``."""
        rows = self._rows(data)
        parts = compact_ted(rows, self.done_keys + self.reward_keys)
        flat = TensorDict(
            {
                **parts["data"].to_dict(),
                _NEXT_KEPT: parts["next_kept"],
                _KEPT: parts["kept"][_KEPT],
                self.shift_key: torch.tensor(self.shift),
                self.is_full_key: torch.tensor(self.is_full),
            },
            batch_size=[],
        )
        if path is not None:
            flat.memmap(prefix=Path(path), copy_existing=True, existsok=True)
        return flat

    def _rows(self, data: Any) -> TensorDictBase:
        name = type(self).__name__
        if not isinstance(data, TensorDictBase) or data.batch_dims != 1:
            raise TypeError(
                f"{name}: expected TED rows, a TensorDict with one batch dim, got "
                f"{type(data).__name__}"
                f"{f' of batch size {tuple(data.batch_size)}' if isinstance(data, TensorDictBase) else ''}."
            )
        if self.done_key not in data.keys(include_nested=True):
            raise KeyError(
                f"{name}: expected a done entry at {self.done_key!r} (TED rows), got entries "
                f"{sorted(map(str, data.keys(include_nested=True, leaves_only=True)))}. Pass "
                f"done_key= to name it."
            )
        return data.roll(-self.shift, 0) if self.shift else data


class Flat2TED:
    """Rebuilds the TED rows that :class:`TED2Flat` flattened (exactly, in storage order).

    Args:
        done_key, shift_key, is_full_key, done_keys, reward_keys: as :class:`TED2Flat`
            (``shift_key`` names where the shift to undo is read).

    Raises:
        KeyError: (at call) the data is not :class:`TED2Flat`'s layout.
    """

    def __init__(
        self,
        done_key: Any = "done",
        shift_key: Any = "shift",
        is_full_key: Any = "is_full",
        done_keys: Sequence[Any] = _DONE_KEYS,
        reward_keys: Sequence[Any] = _REWARD_KEYS,
    ) -> None:
        self.done_key = done_key
        self.shift_key = shift_key
        self.is_full_key = is_full_key
        self.done_keys = tuple(_leaf(key) for key in done_keys)
        self.reward_keys = tuple(_leaf(key) for key in reward_keys)

    def __call__(self, data: TensorDictBase, out: TensorDictBase | None = None) -> TensorDictBase:
        """The TED rows; with ``out`` (a TensorDict of the same rows), written into it."""
        name = type(self).__name__
        missing = [
            key
            for key in (_NEXT_KEPT, _KEPT, self.shift_key)
            if key not in data.keys(include_nested=True)
        ]
        if missing:
            raise KeyError(
                f"{name}: expected TED2Flat's layout (entries {_NEXT_KEPT!r}, {_KEPT!r}, "
                f"{self.shift_key!r}), missing {missing}."
            )
        kept = data.get(_KEPT)
        n = kept.shape[0]
        root = data.exclude(_NEXT_KEPT, _KEPT, self.shift_key, self.is_full_key)
        rows = TensorDict(root.to_dict(), batch_size=[n])
        next_kept = data.get(_NEXT_KEPT)
        parts = {
            "data": rows,
            "next_kept": TensorDict(next_kept.to_dict(), batch_size=[int(kept.sum())]),
            "kept": TensorDict({_KEPT: kept}, batch_size=[n]),
        }
        rows = expand_ted(parts)
        shift = int(data.get(self.shift_key))
        if shift:
            rows = rows.roll(shift, 0)
        if out is not None:
            out.update_(rows)
            return out
        return rows


def _leaf(key: Any) -> str:
    return key[-1] if isinstance(key, tuple) else key
