"""Trajectory utilities: ``split_trajectories`` cuts a ``[*batch, T]`` batch into episodes."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core.keys import DONE, NEXT, NestedKey

TRAJ_IDS = ("collector", "traj_ids")
MASK = ("collector", "mask")


def _row_trajectory_ids(td: TensorDictBase, done_key: NestedKey) -> torch.Tensor:
    """``[N, T]`` ids from done flags: a new trajectory starts after each done step."""
    done = td.get(done_key)
    done = done.reshape(*done.shape[:2], -1).any(-1)
    starts = torch.zeros_like(done, dtype=torch.int64)
    starts[:, 1:] = done[:, :-1]
    starts[:, 0] = 1
    return starts.reshape(-1).cumsum(0).reshape(done.shape)


def split_trajectories(
    td: TensorDictBase,
    *,
    trajectory_key: NestedKey | None = None,
    done_key: NestedKey | None = None,
) -> TensorDictBase:
    """Cuts a batch of shape ``[*batch, T]`` into one row per trajectory, padded with zeros.

    Trajectories are found from ``("collector", "traj_ids")`` when the batch holds it (the
    collectors write it with ``track_traj_ids=True`` or ``split_trajs=True``), else from the
    done flags: a trajectory ends at a step whose ``("next", "done")`` is set, and at the end
    of each row. Rows come in order (sub-env by sub-env, then time), and ``("collector",
    "mask")`` marks the valid steps of each.

    Args:
        td: a batch whose last batch dim is time.
        trajectory_key: the trajectory id entry. Defaults to ``("collector", "traj_ids")``.
        done_key: the done flag used without trajectory ids. Defaults to ``("next", "done")``.

    Returns:
        A TensorDict of batch size ``[n_trajectories, max_length]`` with a ``("collector",
        "mask")`` bool entry of that shape.

    Raises:
        ValueError: ``td`` has no batch dim.
        KeyError: neither the trajectory ids nor the done flags are in ``td``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_collectors import split_trajectories
        >>> done = torch.tensor([False, True, False, False, True, False]).unsqueeze(-1)
        >>> batch = TensorDict(obs=torch.arange(6.0), next=TensorDict(done=done, batch_size=[6]), batch_size=[6])
        >>> out = split_trajectories(batch)
        >>> out.batch_size
        torch.Size([3, 3])
        >>> out["collector", "mask"].sum(-1).tolist()
        [2, 3, 1]
        >>> out["obs"][1].tolist()
        [2.0, 3.0, 4.0]
    """
    if td.batch_dims < 1:
        raise ValueError(
            "split_trajectories: expected a TensorDict with a time dim (batch size [*batch, T]), "
            f"got batch size {tuple(td.batch_size)}."
        )
    trajectory_key = TRAJ_IDS if trajectory_key is None else trajectory_key
    done_key = (NEXT, DONE) if done_key is None else done_key
    steps = td.batch_size[-1]
    flat = td.reshape(-1, steps)
    if flat.get(trajectory_key, None) is not None:
        ids = flat.get(trajectory_key)
        # A row boundary always ends a trajectory, whatever the ids say.
        change = torch.ones_like(ids, dtype=torch.bool)
        change[:, 1:] = ids[:, 1:] != ids[:, :-1]
        ids = change.reshape(-1).cumsum(0).reshape(ids.shape)
    elif flat.get(done_key, None) is not None:
        ids = _row_trajectory_ids(flat, done_key)
    else:
        raise KeyError(
            f"split_trajectories: expected {trajectory_key!r} or {done_key!r} in the batch, "
            f"found neither (keys: {sorted(map(str, td.keys(True, True)))})."
        )
    _, lengths = torch.unique_consecutive(ids.reshape(-1), return_counts=True)
    starts = torch.cumsum(lengths, 0) - lengths
    longest = int(lengths.max())
    offsets = torch.arange(longest)
    mask = offsets < lengths.unsqueeze(-1)
    index = (starts.unsqueeze(-1) + offsets).clamp_max(flat.numel() - 1)
    rows = flat.reshape(-1)[index.reshape(-1)].reshape(*index.shape)

    def zero_padding(x: torch.Tensor) -> torch.Tensor:
        return x.masked_fill(~mask.reshape(*mask.shape, *(1,) * (x.ndim - 2)), 0)

    out = rows.apply(zero_padding)
    out.set(MASK, mask)
    return out


__all__ = ["split_trajectories"]
