"""Trains on samples of a replay buffer: :class:`ReplayBufferTrainer`."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_objectives.trainers._utils import check_positive_int, valid_mask
from rl_objectives.trainers.hooks.common import TrainerHookBase


class ReplayBufferTrainer(TrainerHookBase):
    """Stores each collected batch in a replay buffer and trains on samples from it.

    Registers three ops: ``batch_process`` extends the buffer with the batch,
    ``process_optim_batch`` replaces the batch of every optimisation step with a sample, and
    ``post_loss`` passes the sample back to the buffer's ``update_tensordict_priority`` when it
    has one and the sample carries a ``"priority_weight"`` (prioritized samplers add it, and
    the buffer reads the priority the loss wrote; uniform samples are not sent back). The buffer's
    ``state_dict()``, when it has one, is saved with the trainer's.

    The buffer is duck-typed: anything with ``extend(td)`` and ``sample(batch_size)`` (or
    ``sample()`` when ``batch_size`` is ``None``), such as rl-buffers'
    ``TensorDictReplayBuffer``.

    Args:
        replay_buffer: the buffer.
        batch_size: passed to ``sample``; ``None`` calls ``sample()`` (the buffer's own
            batch size).

    Keyword Args:
        flatten_tensordicts: store the batch as a flat list of steps (the valid ones only,
            if the batch has a ``("collector", "mask")``). Defaults to ``False``: the batch
            goes to ``extend`` as it is (its first dimension indexes the stored items).
        device: move samples there. Defaults to leaving them where the buffer puts them.

    Raises:
        TypeError: the buffer lacks ``extend`` or ``sample``.
        ValueError: ``batch_size`` is not a positive int or ``None``.
    """

    def __init__(
        self,
        replay_buffer: Any,
        batch_size: int | None = None,
        *,
        flatten_tensordicts: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        for method in ("extend", "sample"):
            if not callable(getattr(replay_buffer, method, None)):
                raise TypeError(
                    f"ReplayBufferTrainer: the replay buffer must have an {method}() method, "
                    f"got {type(replay_buffer).__name__}."
                )
        if batch_size is not None:
            check_positive_int("ReplayBufferTrainer", "batch_size", batch_size)
        self.replay_buffer = replay_buffer
        self.batch_size = batch_size
        self.flatten_tensordicts = flatten_tensordicts
        self.device = device
        #: Whether :meth:`state_dict` holds the buffer's state. A
        #: :class:`~rl_objectives.trainers.RunCheckpointer` turns it off: it saves the buffer
        #: through the buffer's own ``dumps`` (its storage checkpointer) instead.
        self.save_buffer = True

    def extend(self, batch: TensorDictBase) -> None:
        """Adds ``batch`` to the buffer (flattened to valid steps if asked)."""
        if self.flatten_tensordicts:
            mask = valid_mask(batch)
            batch = batch[mask] if mask is not None else batch.reshape(-1)
        self.replay_buffer.extend(batch)

    def sample(self, batch: TensorDictBase) -> TensorDictBase:
        """Returns a sample of the buffer (``batch`` itself is not used)."""
        if self.batch_size is None:
            sample = self.replay_buffer.sample()
        else:
            sample = self.replay_buffer.sample(self.batch_size)
        return sample if self.device is None else sample.to(self.device)

    def update_priority(self, batch: TensorDictBase) -> None:
        """Passes the sample the loss has seen to the buffer's priority update, if any."""
        update = getattr(self.replay_buffer, "update_tensordict_priority", None)
        if update is not None and self._prioritized(batch):
            update(batch)

    def _prioritized(self, batch: TensorDictBase) -> bool:
        # A buffer that exposes its sampler is updated only when the sample came from a
        # prioritized sampler, which adds "priority_weight" (a uniform sampler refuses).
        if getattr(self.replay_buffer, "sampler", None) is None:
            return True
        return "priority_weight" in batch.keys()

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the three ops, and the buffer's state under ``name``."""
        trainer.register_op("batch_process", self.extend)
        trainer.register_op("process_optim_batch", self.sample)
        trainer.register_op("post_loss", self.update_priority)
        trainer.register_module(name or "replay_buffer", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"replay_buffer": buffer.state_dict()}``, or ``{}`` if the buffer has none (or
        :attr:`save_buffer` is off)."""
        if self.save_buffer and hasattr(self.replay_buffer, "state_dict"):
            return {"replay_buffer": self.replay_buffer.state_dict()}
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the buffer's state, if it was saved."""
        if "replay_buffer" in state_dict:
            self.replay_buffer.load_state_dict(state_dict["replay_buffer"])
