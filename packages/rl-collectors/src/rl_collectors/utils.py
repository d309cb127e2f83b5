"""Trajectory utilities: ``split_trajectories`` cuts a ``[*batch, T]`` batch into episodes."""

from __future__ import annotations

import warnings

import torch
from tensordict import TensorDictBase, unravel_key

from rl_core.keys import DONE, NEXT, NestedKey, key_path
from rl_core.keys import MASK as _MASK_NAME

COLLECTOR = "collector"
TRAJ_IDS_NAME = "traj_ids"
TRAJ_IDS = (COLLECTOR, TRAJ_IDS_NAME)
MASK = (COLLECTOR, _MASK_NAME)


def _row_trajectory_ids(done: torch.Tensor) -> torch.Tensor:
    """``[N, T]`` ids counted from 0 in row-major order: a new trajectory starts after each
    done step and at the start of each row."""
    done = done.reshape(*done.shape[:2], -1).any(-1)
    starts = torch.zeros_like(done, dtype=torch.int64)
    starts[:, 1:] = done[:, :-1]
    starts[:, 0] = 1
    return starts.reshape(-1).cumsum(0).reshape(done.shape) - 1


def _meta_keys(
    td: TensorDictBase, prefix: NestedKey | None, trajectory_key: NestedKey | None
) -> tuple[NestedKey, NestedKey]:
    """The trajectory-id and mask keys, as TorchRL reads and writes them."""
    if trajectory_key is not None:
        path = key_path(unravel_key(trajectory_key))
        return unravel_key(path), unravel_key((*path[:-1], _MASK_NAME))
    if prefix is None:
        prefix = COLLECTOR if COLLECTOR in td.keys() else ()
    path = key_path(unravel_key(prefix)) if prefix != () else ()
    return unravel_key((*path, TRAJ_IDS_NAME)), unravel_key((*path, _MASK_NAME))


def _next_done_key(done_key: NestedKey | None) -> NestedKey:
    """``done_key`` names an entry under ``"next"`` (TorchRL's rule); a key already under
    ``"next"`` is kept as it is."""
    if done_key is None:
        return (NEXT, DONE)
    path = key_path(unravel_key(done_key))
    return unravel_key(path if path[0] == NEXT else (NEXT, *path))


def split_trajectories(
    td: TensorDictBase,
    *,
    prefix: NestedKey | None = None,
    trajectory_key: NestedKey | None = None,
    done_key: NestedKey | None = None,
    as_nested: bool | torch.layout = False,
) -> TensorDictBase:
    """Cuts a batch of shape ``[*batch, T]`` into one row per trajectory, padded with zeros.

    Trajectories are found from the trajectory ids when the batch holds them (the collectors
    write ``("collector", "traj_ids")``), else from the done flags: a trajectory ends at a
    step whose ``("next", "done")`` is set, and at the end of each row. Rows come in order
    (sub-env by sub-env, then time), and a ``"mask"`` entry beside the trajectory ids marks
    the valid steps of each. When the ids come from the done flags, the output carries them
    too (counted from 0, in row order).

    The keys follow TorchRL: ``trajectory_key`` if given (the mask is its sibling
    ``"mask"``), else ``(prefix, "traj_ids")`` and ``(prefix, "mask")``, where ``prefix``
    defaults to ``"collector"`` when the batch has a ``"collector"`` entry and to no prefix
    (``"traj_ids"``, ``"mask"`` at the root) otherwise.

    Args:
        td: a batch whose last batch dim is time.

    Keyword Args:
        prefix: where the trajectory ids are read and the mask written (see above).
        trajectory_key: the trajectory id entry; supersedes ``prefix``.
        done_key: the done entry under ``"next"`` read without trajectory ids
            (``"done"`` by default; a key that starts with ``"next"`` is taken as it is).
        as_nested: ``True`` (or ``torch.strided``) returns a TensorDict of batch size
            ``[n_trajectories, -1]`` whose entries are nested tensors, one component per
            trajectory, without padding and without a mask;
            ``out.to_padded_tensor(mask_key=...)`` gives the padded result.

    Returns:
        A TensorDict of batch size ``[n_trajectories, max_length]`` with a bool mask of that
        shape (or the nested TensorDict described under ``as_nested``).

    Raises:
        ValueError: ``td`` has no batch dim, or ``as_nested`` names a layout other than
            ``torch.strided``.
        TypeError: ``as_nested`` is neither a bool nor a ``torch.layout``.
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
        >>> out["mask"].sum(-1).tolist(), out["traj_ids"][:, 0].tolist()
        ([2, 3, 1], [0, 1, 2])
        >>> out["obs"][1].tolist()
        [2.0, 3.0, 4.0]
        >>> nested = split_trajectories(batch, as_nested=True)
        >>> nested.batch_size, [t.tolist() for t in nested["obs"].unbind(0)]
        (torch.Size([3, -1]), [[0.0, 1.0], [2.0, 3.0, 4.0], [5.0]])
    """
    if td.batch_dims < 1:
        raise ValueError(
            "split_trajectories: expected a TensorDict with a time dim (batch size [*batch, T]), "
            f"got batch size {tuple(td.batch_size)}."
        )
    if not isinstance(as_nested, bool | torch.layout):
        raise TypeError(
            f"split_trajectories: as_nested must be a bool or a torch.layout, got {as_nested!r}."
        )
    if isinstance(as_nested, torch.layout) and as_nested is not torch.strided:
        raise ValueError(
            f"split_trajectories: as_nested={as_nested} is not supported: a TensorDict of batch "
            "size [n_trajectories, -1] holds strided nested tensors only. Pass as_nested=True."
        )
    ids_key, mask_key = _meta_keys(td, prefix, trajectory_key)
    done_key = _next_done_key(done_key)
    steps = td.batch_size[-1]
    flat = td.reshape(-1, steps)
    if flat.get(ids_key, None) is not None:
        ids = flat.get(ids_key)
        # A row boundary always ends a trajectory, whatever the ids say.
        change = torch.ones_like(ids, dtype=torch.bool)
        change[:, 1:] = ids[:, 1:] != ids[:, :-1]
        ids = change.reshape(-1).cumsum(0).reshape(ids.shape)
    elif flat.get(done_key, None) is not None:
        ids = _row_trajectory_ids(flat.get(done_key))
        flat = flat.clone(False)
        flat.set(ids_key, ids)
    else:
        raise KeyError(
            f"split_trajectories: expected {ids_key!r} or {done_key!r} in the batch, "
            f"found neither (keys: {sorted(map(str, td.keys(True, True)))}). Pass "
            "trajectory_key= or done_key= to name the entries."
        )
    _, lengths = torch.unique_consecutive(ids.reshape(-1), return_counts=True)
    if as_nested:
        return _nested(flat.reshape(-1), lengths.tolist())
    starts = torch.cumsum(lengths, 0) - lengths
    longest = int(lengths.max())
    offsets = torch.arange(longest)
    mask = offsets < lengths.unsqueeze(-1)
    index = (starts.unsqueeze(-1) + offsets).clamp_max(flat.numel() - 1)
    rows = flat.reshape(-1)[index.reshape(-1)].reshape(*index.shape)

    def zero_padding(x: torch.Tensor) -> torch.Tensor:
        return x.masked_fill(~mask.reshape(*mask.shape, *(1,) * (x.ndim - 2)), 0)

    out = rows.apply(zero_padding)
    out.set(mask_key, mask)
    return out


def _nested(steps: TensorDictBase, lengths: list[int]) -> TensorDictBase:
    """``[N]`` steps as a ``[len(lengths), -1]`` TensorDict of strided nested tensors."""

    def nest(x: torch.Tensor) -> torch.Tensor:
        with warnings.catch_warnings():
            # torch flags its strided nested layout as a prototype at every construction.
            warnings.filterwarnings("ignore", "The PyTorch API of nested tensors", UserWarning)
            return torch.nested.nested_tensor(list(x.split(lengths)), layout=torch.strided)

    return steps.apply(nest, batch_size=[len(lengths), -1])


__all__ = ["split_trajectories"]
