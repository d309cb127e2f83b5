"""Trajectories in a circular storage: where each one starts and how long it is.

Items are numbered in the storage (physical positions ``0..n-1``) and, for the slice
samplers, in write order (logical positions: ``0`` is the oldest item). When the storage
has wrapped around, the oldest item sits right after the newest, at the writer's next row;
a trajectory may then run past the end of the storage and go on at position 0. Trajectory
boundaries come from a trajectory-id entry (``traj_key``: a new id starts a trajectory) or
from an end-of-trajectory flag (``end_key``: the flagged item is the last one); the newest
item always ends a trajectory, and the oldest always starts one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class Trajectories:
    """Trajectories of a storage in write order.

    Attributes:
        start: ``[K]`` logical position of each trajectory's first item.
        length: ``[K]`` number of items of each trajectory.
        oldest: physical position of logical position 0.
        n: number of stored items.
    """

    start: Tensor
    length: Tensor
    oldest: int
    n: int

    def physical(self, logical: Tensor) -> Tensor:
        """Maps logical positions to storage positions."""
        if self.oldest == 0:
            return logical
        return (logical + self.oldest) % self.n

    def logical(self, physical: Tensor) -> Tensor:
        """Maps storage positions to logical positions."""
        if self.oldest == 0:
            return physical
        return (physical - self.oldest) % self.n


def find_trajectories(
    column: Tensor, *, is_end_flag: bool, oldest: int, where: str
) -> Trajectories:
    """Splits a storage into trajectories.

    Args:
        column: ``[n]`` (or ``[n, 1]``) trajectory ids or end flags, in storage order.
        is_end_flag: True if ``column`` flags trajectory ends, False if it holds ids.
        oldest: physical position of the oldest item (0 unless the storage wrapped).
        where: caller name for errors.

    Returns:
        The trajectories in write order.
    """
    n = column.shape[0]
    if column.dim() > 1:
        if column[0].numel() != 1:
            raise ValueError(
                f"{where}: expected one trajectory id or end flag per item, got entries of "
                f"shape {tuple(column.shape[1:])}."
            )
        column = column.reshape(n)
    if oldest:
        column = torch.roll(column, -oldest)
    if is_end_flag:
        # Read the flags in place (no copy of the column); the newest item always ends one.
        last = column.nonzero().squeeze(-1)
        if last.numel() == 0 or int(last[-1]) != n - 1:
            last = torch.cat([last, torch.tensor([n - 1], device=last.device)])
    else:
        ends = torch.empty(n, dtype=torch.bool, device=column.device)
        torch.ne(column[1:], column[:-1], out=ends[:-1])
        ends[-1] = True
        last = ends.nonzero().squeeze(-1)
    start = torch.zeros_like(last)
    start[1:] = last[:-1] + 1
    return Trajectories(start=start, length=last - start + 1, oldest=oldest, n=n)


def slice_positions(start: Tensor, length: int) -> Tensor:
    """``[K * length]`` logical positions of ``K`` slices of ``length`` items from ``start``."""
    return (start.unsqueeze(-1) + torch.arange(length, device=start.device)).reshape(-1)
