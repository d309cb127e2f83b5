"""NextStateReconstructor: ``("next", obs)`` rebuilt in a sampled batch from the next row."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey


def _as_next(key: NestedKey) -> tuple[str, ...]:
    return ("next", *((key,) if isinstance(key, str) else tuple(key)))


class NextStateReconstructor(Transform):
    """Writes ``("next", key)`` of each row of a sampled batch from ``key`` of the row after it,
    for data stored without its next observations (they repeat the next row's).

    Along the batch's first dim, row ``i``'s next entry is row ``i + 1``'s entry when row
    ``i + 1`` continues row ``i``'s trajectory: same ``traj_key`` value, ``done_key`` False
    at row ``i`` and, with ``step_count_key``, a step count one higher. Elsewhere (trajectory
    ends, slice boundaries, the last row) it is ``fill_value``. Marker entries with trailing
    dims are read at their first element. A data transform (replay-buffer samples): steps and
    resets of an env pass through.

    Args:
        keys: the root entries whose ``("next", key)`` is rebuilt. Defaults to
            ``("observation",)``.

    Keyword Args:
        traj_key: the trajectory id, or ``None`` for one trajectory. Defaults to
            ``("collector", "traj_ids")``.
        done_key: the flag that ends a trajectory at its row, or ``None``. Defaults to
            ``("next", "done")``.
        step_count_key: a step count that must rise by one, or ``None`` (the default).
        fill_value: the value where no next row continues the trajectory. Defaults to NaN
            (give an int for integer entries).
        strict: a missing marker entry raises (``True``, the default) or its check is
            skipped.

    Raises:
        KeyError: (at a call) a missing entry of ``keys``, or with ``strict`` a missing marker.
        ValueError: (at a call) a batch with no dims.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"observation": torch.arange(4.0).unsqueeze(-1),
        ...                  ("collector", "traj_ids"): torch.tensor([0, 0, 1, 1]),
        ...                  ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> NextStateReconstructor()(td)["next", "observation"].squeeze(-1).tolist()
        [1.0, nan, 3.0, nan]
    """

    def __init__(
        self,
        keys: Sequence[NestedKey] = ("observation",),
        *,
        traj_key: NestedKey | None = ("collector", "traj_ids"),
        done_key: NestedKey | None = ("next", "done"),
        step_count_key: NestedKey | None = None,
        fill_value: float = float("nan"),
        strict: bool = True,
    ) -> None:
        super().__init__()
        self.keys = tuple(keys)
        self.traj_key = traj_key
        self.done_key = done_key
        self.step_count_key = step_count_key
        self.fill_value = fill_value
        self.strict = bool(strict)

    def _marker(self, tensordict: TensorDictBase, key: NestedKey | None, what: str):
        if key is None:
            return None
        value = tensordict.get(key, None)
        if value is None:
            if self.strict:
                raise KeyError(
                    f"NextStateReconstructor: the {what} {key!r} is not in the batch; pass "
                    f"{what.replace(' ', '_')}=None to skip that check, or strict=False."
                )
            return None
        return value.reshape(value.shape[0], -1)[:, 0]

    def continues(self, tensordict: TensorDictBase) -> torch.Tensor:
        """``(B,)`` bool: whether row ``i + 1`` is the next step of row ``i``."""
        if tensordict.batch_dims == 0:
            raise ValueError(
                "NextStateReconstructor: expected a batch with at least one dim (rows of "
                "transitions), got batch_size []."
            )
        n = tensordict.batch_size[0]
        link = torch.ones(max(n - 1, 0), dtype=torch.bool, device=tensordict.device)
        traj = self._marker(tensordict, self.traj_key, "traj key")
        if traj is not None:
            link &= traj[1:] == traj[:-1]
        done = self._marker(tensordict, self.done_key, "done key")
        if done is not None:
            link &= ~done[:-1].bool()
        count = self._marker(tensordict, self.step_count_key, "step count key")
        if count is not None:
            link &= count[1:] == count[:-1] + 1
        return torch.cat([link, torch.zeros(min(n, 1), dtype=torch.bool, device=link.device)])

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        valid = self.continues(tensordict)
        for key in self.keys:
            value = tensordict.get(key, None)
            if value is None:
                raise KeyError(f"NextStateReconstructor: no entry {key!r} in the batch.")
            shifted = torch.cat([value[1:], value[:1]]) if len(value) else value
            rows = valid.reshape(-1, *([1] * (value.ndim - 1)))
            fill = torch.full_like(value, self.fill_value)
            tensordict.set(_as_next(key), torch.where(rows, shifted, fill))
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset


__all__ = ["NextStateReconstructor"]
