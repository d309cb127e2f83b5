"""Logs a reduction of a batch entry: :class:`LogScalar`."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core.keys import NEXT, REWARD, NestedKey
from rl_objectives.trainers._utils import valid_mask
from rl_objectives.trainers.hooks.common import TrainerHookBase

_REDUCTIONS = ("mean", "sum", "max", "min")


class LogScalar(TrainerHookBase):
    """Logs the mean (or sum, max, min) of an entry of each collected batch.

    Registered at ``pre_steps_log``. Only the valid steps count when the batch has a
    ``("collector", "mask")``.

    Args:
        key: the entry to reduce. Defaults to ``("next", "reward")``.
        logname: the logged name. Defaults to the key, its parts joined with ``"_"``
            (``"next_reward"``).

    Keyword Args:
        log_pbar: show the value on the progress bar. Defaults to ``False``.
        include_std: also log ``{logname}_std``. Defaults to ``True``.
        reduction: ``"mean"`` (default), ``"sum"``, ``"max"`` or ``"min"``.

    Raises:
        ValueError: an unknown reduction.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.trainers import LogScalar
        >>> batch = TensorDict(next=TensorDict(reward=torch.tensor([[1.0], [3.0]]), batch_size=[2]), batch_size=[2])
        >>> out = LogScalar(("next", "reward"), "r_training")(batch)
        >>> print(out["r_training"], round(out["r_training_std"], 4), out["log_pbar"])
        2.0 1.4142 False
    """

    def __init__(
        self,
        key: NestedKey = (NEXT, REWARD),
        logname: str | None = None,
        *,
        log_pbar: bool = False,
        include_std: bool = True,
        reduction: str = "mean",
    ) -> None:
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"LogScalar: reduction must be one of {_REDUCTIONS}, got {reduction!r}."
            )
        if logname is None:
            logname = "_".join((key,) if isinstance(key, str) else key)
        self.key = key
        self.logname = logname
        self.log_pbar = log_pbar
        self.include_std = include_std
        self.reduction = reduction

    def __call__(self, batch: TensorDictBase) -> dict[str, Any]:
        """Returns ``{logname: value, (logname_std: std,) "log_pbar": log_pbar}``.

        Raises:
            KeyError: the batch has no entry ``key``.
        """
        values = batch.get(self.key, None)
        if values is None:
            raise KeyError(
                f"LogScalar: the batch has no entry {self.key!r}; it has "
                f"{sorted(batch.keys(include_nested=True, leaves_only=True), key=str)}."
            )
        mask = valid_mask(batch)
        if mask is not None:
            values = values[mask]
        values = values.detach().to(torch.float64)
        out: dict[str, Any] = {self.logname: getattr(values, self.reduction)().item()}
        if self.include_std and values.numel() > 1:
            out[f"{self.logname}_std"] = values.std().item()
        out["log_pbar"] = self.log_pbar
        return out

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the hook at ``pre_steps_log`` (it has no state to save)."""
        trainer.register_op("pre_steps_log", self)
