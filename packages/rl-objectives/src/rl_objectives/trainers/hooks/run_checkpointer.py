"""Saves a trainer's whole state every few frames and resumes from it: :class:`RunCheckpointer`."""

from __future__ import annotations

import os
from typing import Any

from rl_objectives.trainers._utils import check_positive_int
from rl_objectives.trainers.checkpoint import Checkpoint, GlobalRNGState
from rl_objectives.trainers.hooks.common import TrainerHookBase
from rl_objectives.trainers.hooks.replay_buffer import ReplayBufferTrainer
from rl_objectives.trainers.rotation import CheckpointRotation


class RunCheckpointer(TrainerHookBase):
    """Checkpoints a :class:`~rl_objectives.trainers.Trainer` at batch boundaries, rotating,
    and restores the newest checkpoint so that an interrupted run goes on exactly.

    Registered at ``"post_steps"``: once at least ``interval`` frames were collected since the
    last save, it saves a :class:`~rl_objectives.trainers.Checkpoint` of

    * ``trainer``: the trainer's state (frame and step counts, the loss module, the
      optimizer, every registered hook: schedulers, target updaters, normalisers, ...,
      the collector's state and torch's RNG);
    * ``replay_buffer`` (``replay_buffer_1``, ...): each buffer of a
      :class:`~rl_objectives.trainers.ReplayBufferTrainer` that has ``dumps``/``loads``,
      through its storage checkpointer (and then left out of the trainer's state);
    * ``rng``: :class:`~rl_objectives.trainers.GlobalRNGState` (NumPy's and Python's too),

    through a :class:`~rl_objectives.trainers.CheckpointRotation` keeping the newest
    ``keep_last``. Call :meth:`restore` after registering every hook and before
    ``trainer.train()``; call ``save(force=True)`` after training for a final checkpoint.

    Args:
        directory: where the checkpoints go.

    Keyword Args:
        interval: frames between two saves. Defaults to 10000.
        keep_last: checkpoints kept. Defaults to 2.
        keep_best: ``(metadata_key, mode)`` also keeps the best (see
            :class:`~rl_objectives.trainers.CheckpointRotation`); the metadata holds the
            trainer's latest logged scalars.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        interval: int = 10000,
        keep_last: int = 2,
        keep_best: tuple[str, str] | None = None,
    ) -> None:
        self.interval = check_positive_int("RunCheckpointer", "interval", interval)
        self.rotation = CheckpointRotation(directory, keep_last=keep_last, keep_best=keep_best)
        self.trainer: Any = None
        self.checkpoint: Checkpoint | None = None
        self.last_saved: int | None = None

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the save at ``"post_steps"`` and builds the checkpoint's components."""
        components: dict[str, Any] = {"trainer": trainer, "rng": GlobalRNGState()}
        buffers = 0
        for hook in trainer.registered_modules().values():
            if isinstance(hook, ReplayBufferTrainer) and callable(
                getattr(hook.replay_buffer, "dumps", None)
            ):
                hook.save_buffer = False  # the checkpoint saves it through its checkpointer
                components["replay_buffer" if buffers == 0 else f"replay_buffer_{buffers}"] = (
                    hook.replay_buffer
                )
                buffers += 1
        self.trainer = trainer
        self.checkpoint = Checkpoint(**components)
        self.last_saved = trainer.collected_frames
        trainer.register_op("post_steps", self)

    def __call__(self) -> None:
        """Saves when ``interval`` frames have passed since the last save."""
        self.save()

    def save(self, force: bool = False) -> None:
        """Saves a checkpoint if due (or ``force``), named after the collected frames."""
        if self.trainer is None or self.checkpoint is None:
            raise RuntimeError(
                "RunCheckpointer: register it first (checkpointer.register(trainer))."
            )
        frames = self.trainer.collected_frames
        due = self.last_saved is None or frames - self.last_saved >= self.interval
        if not (force or due) or (force and frames == self.last_saved and self.rotation.latest()):
            return
        metadata = {k: v for k, v in self.trainer.latest_logs.items() if isinstance(v, float)}
        self.rotation.save(self.checkpoint, frames, metadata=metadata)
        self.last_saved = frames

    def restore(self) -> bool:
        """Loads the newest checkpoint of the directory; ``False`` when there is none.

        Raises:
            CheckpointError: the newest checkpoint is damaged (the file is named).
        """
        if self.checkpoint is None:
            raise RuntimeError("RunCheckpointer: register it before restoring.")
        loaded = self.rotation.load_latest(self.checkpoint)
        if loaded is None:
            return False
        self.last_saved = self.trainer.collected_frames
        return True
