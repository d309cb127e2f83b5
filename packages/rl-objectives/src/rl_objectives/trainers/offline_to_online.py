"""Pre-trains on a dataset, then goes on online: :class:`OfflineToOnlineTrainer`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_objectives.trainers._utils import check_positive_int
from rl_objectives.trainers.off_policy import OffPolicyTrainer


class OfflineToOnlineTrainer(OffPolicyTrainer):
    """Runs ``offline_steps`` optimisation steps on samples of ``offline_buffer``, then trains
    online as an :class:`~rl_objectives.trainers.OffPolicyTrainer` on ``replay_buffer``.

    An offline step samples ``batch_size`` transitions from the offline buffer, runs the loss,
    hands a prioritized offline buffer its priorities back (``update_tensordict_priority``),
    then runs the ``"optimizer"`` and ``"post_optim"`` ops (target-network updates) like an
    online step. The offline losses' means are logged as ``offline/<term>``. The number of
    offline steps done is saved with the trainer (a checkpoint is written when the phase
    ends), so a run resumed after it does not repeat it.

    Args:
        collector, total_frames, loss_module, optimizer: as
            :class:`~rl_objectives.trainers.OffPolicyTrainer`.

    Keyword Args:
        offline_buffer: the dataset, anything with ``sample(batch_size)`` (an rl-buffers
            buffer over an offline dataset).
        offline_steps: optimisation steps before the first collected batch.
        replay_buffer: the online buffer (it may be the offline one, to mix both).
        batch_size: transitions per sample, offline and online.
        **kwargs: the :class:`~rl_objectives.trainers.OffPolicyTrainer`'s keyword arguments.

    Raises:
        TypeError: ``offline_buffer`` has no ``sample``.
        ValueError: ``offline_steps`` is not a positive int.
    """

    def __init__(
        self,
        collector: Iterable[TensorDictBase],
        total_frames: int,
        loss_module: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        offline_buffer: Any,
        offline_steps: int,
        replay_buffer: Any,
        batch_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        if not callable(getattr(offline_buffer, "sample", None)):
            raise TypeError(
                f"OfflineToOnlineTrainer: offline_buffer must have a sample() method, got "
                f"{type(offline_buffer).__name__}."
            )
        super().__init__(
            collector,
            total_frames,
            loss_module,
            optimizer,
            replay_buffer=replay_buffer,
            batch_size=batch_size,
            **kwargs,
        )
        self.offline_buffer = offline_buffer
        self.offline_steps = check_positive_int(
            "OfflineToOnlineTrainer", "offline_steps", offline_steps
        )
        self.offline_batch_size = batch_size
        self.offline_done = 0
        self.register_module("offline_progress", _OfflineProgress(self))

    def train(self) -> None:
        """Finishes the offline steps, then runs the online loop."""
        self._pretrain()
        super().train()

    def _pretrain(self) -> None:
        if self.offline_done >= self.offline_steps:
            return
        if not self._ops["optimizer"]:
            raise ValueError(
                "OfflineToOnlineTrainer: no optimizer: build the trainer with optimizer=... or "
                "register an OptimizerHook."
            )
        totals: dict[str, torch.Tensor] = {}
        while self.offline_done < self.offline_steps:
            if self.offline_batch_size is None:
                sub_batch = self.offline_buffer.sample()
            else:
                sub_batch = self.offline_buffer.sample(self.offline_batch_size)
            self.optim_count += 1
            with self.forward_context():
                losses = self.loss_module(sub_batch)
            update = getattr(self.offline_buffer, "update_tensordict_priority", None)
            if update is not None:
                update(sub_batch)
            for name, value in self._optimizer_step(losses).items():
                totals[name] = totals[name] + value if name in totals else value
            self._call("post_optim")
            self.offline_done += 1
        self._log(**{f"offline/{n}": (t / self.offline_steps).item() for n, t in totals.items()})
        self.save_trainer(force_save=True)


class _OfflineProgress:
    """Saves the offline step count with the trainer's state."""

    def __init__(self, trainer: OfflineToOnlineTrainer) -> None:
        self.trainer = trainer

    def state_dict(self) -> dict[str, int]:
        return {"offline_done": self.trainer.offline_done}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.trainer.offline_done = int(state["offline_done"])
