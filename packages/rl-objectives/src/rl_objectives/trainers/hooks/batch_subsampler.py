"""Trains on random sub-trajectories of the collected batch: :class:`BatchSubSampler`."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_objectives.trainers._utils import COLLECTOR_MASK, check_positive_int, valid_mask
from rl_objectives.trainers.hooks.common import TrainerHookBase


class BatchSubSampler(TrainerHookBase):
    """Replaces each optimisation step's batch by random windows of the collected batch.

    The batch is read as ``[..., T]`` trajectories (time last, as collectors yield them);
    its leading dimensions are flattened into rows. The valid length of a row is its
    ``("collector", "mask")`` count (a mask is a prefix of valid steps), else ``T``.

    * ``sub_traj_len == 0``: returns ``batch_size`` valid steps drawn without replacement
      (shape ``[batch_size]``; all of them if there are fewer).
    * ``sub_traj_len > 0``: returns ``batch_size // sub_traj_len`` windows, shape
      ``[n, sub_traj_len]``. A window picks a row uniformly among rows of valid length at
      least ``max(min_sub_traj_len, 1)``, takes ``w = min(length, sub_traj_len)`` consecutive
      valid steps at a uniform start in ``[0, length - w]``, and pads the rest by repeating
      the last step. Its ``("collector", "mask")`` marks the ``w`` real steps.

    Draws use torch's global generator (saved and restored with the trainer's state).

    Args:
        batch_size: the number of steps per optimisation batch.
        sub_traj_len: the window length; 0 (default) samples single steps.
        min_sub_traj_len: rows with fewer valid steps are never drawn. Defaults to 0.

    Raises:
        ValueError: a non-positive ``batch_size``, a negative length, ``sub_traj_len`` above
            ``batch_size``, or (when called) a batch with no row long enough.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.trainers import BatchSubSampler
        >>> batch = TensorDict(t=torch.arange(20).reshape(2, 10), batch_size=[2, 10])
        >>> sub = BatchSubSampler(batch_size=8, sub_traj_len=4)(batch)
        >>> print(sub.shape, (sub["t"].diff(dim=-1) == 1).all().item())
        torch.Size([2, 4]) True
    """

    def __init__(self, batch_size: int, sub_traj_len: int = 0, min_sub_traj_len: int = 0) -> None:
        self.batch_size = check_positive_int("BatchSubSampler", "batch_size", batch_size)
        for name, value in (("sub_traj_len", sub_traj_len), ("min_sub_traj_len", min_sub_traj_len)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"BatchSubSampler: {name} must be an int >= 0, got {value!r}.")
        if sub_traj_len > batch_size:
            raise ValueError(
                f"BatchSubSampler: sub_traj_len ({sub_traj_len}) exceeds batch_size "
                f"({batch_size}); a batch holds batch_size // sub_traj_len windows."
            )
        self.sub_traj_len = sub_traj_len
        self.min_sub_traj_len = min_sub_traj_len

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        """Returns the sampled steps or windows (see the class doc)."""
        if batch.ndim == 0:
            raise ValueError(
                "BatchSubSampler: expected a batch with a time dimension, got batch_size []."
            )
        mask = valid_mask(batch)
        if self.sub_traj_len == 0:
            flat = batch.reshape(-1) if mask is None else batch[mask]
            index = torch.randperm(flat.numel())[: self.batch_size]
            return flat[index]
        rows = batch.reshape(-1, batch.shape[-1])
        length_t = batch.shape[-1]
        lengths = (
            torch.full((rows.shape[0],), length_t)
            if mask is None
            else mask.reshape(-1, length_t).sum(-1)
        )
        eligible = (lengths >= max(self.min_sub_traj_len, 1)).nonzero().squeeze(-1)
        if eligible.numel() == 0:
            raise ValueError(
                f"BatchSubSampler: no trajectory has at least {max(self.min_sub_traj_len, 1)} "
                f"valid steps (valid lengths {lengths.tolist()}); lower min_sub_traj_len."
            )
        n = self.batch_size // self.sub_traj_len
        row = eligible[torch.randint(eligible.numel(), (n,))]
        width = lengths[row].clamp(max=self.sub_traj_len)
        start = (torch.rand(n) * (lengths[row] - width + 1)).floor().long()
        offset = torch.arange(self.sub_traj_len)
        real = offset.unsqueeze(0) < width.unsqueeze(1)
        time = start.unsqueeze(1) + torch.minimum(offset.unsqueeze(0), (width - 1).unsqueeze(1))
        out = rows[row.unsqueeze(1).expand_as(time), time]
        out.set(COLLECTOR_MASK, real)
        return out

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers at ``"process_optim_batch"`` (stateless: ``name`` is not used)."""
        trainer.register_op("process_optim_batch", self)
