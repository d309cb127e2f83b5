"""Hooks driving an offline-to-online replay buffer: :class:`OfflineToOnlineReplayBufferHook`
and :class:`OfflineToOnlineAnnealHook` (TorchRL's names)."""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase

from rl_objectives.trainers._utils import check_positive_int
from rl_objectives.trainers.hooks.common import TrainerHookBase


def _check_buffer(owner: str, buffer: Any, *methods: str) -> Any:
    missing = [m for m in methods if not callable(getattr(buffer, m, None))]
    if missing or not hasattr(buffer, "offline_fraction"):
        raise TypeError(
            f"{owner}: buffer must be an offline-to-online replay buffer (extend, sample and "
            f"an offline_fraction attribute, e.g. rl_buffers.OfflineToOnlineReplayBuffer), got "
            f"{type(buffer).__name__}."
        )
    return buffer


class OfflineToOnlineReplayBufferHook(TrainerHookBase):
    """Writes each collected batch into the online part of ``buffer`` (``batch_process``) and
    trains on its mixed offline/online samples of ``batch_size`` items
    (``process_optim_batch``).

    Args:
        buffer: an offline-to-online buffer (``extend`` writes online only, ``sample`` mixes
            by its ``offline_fraction``), e.g. ``rl_buffers.OfflineToOnlineReplayBuffer``.
        batch_size: items per sample; None uses the buffer's own batch size.

    Raises:
        TypeError: ``buffer`` has no ``extend``, ``sample`` or ``offline_fraction``.
    """

    def __init__(self, buffer: Any, batch_size: int | None = None) -> None:
        self.buffer = _check_buffer("OfflineToOnlineReplayBufferHook", buffer, "extend", "sample")
        if batch_size is not None:
            check_positive_int("OfflineToOnlineReplayBufferHook", "batch_size", batch_size)
        self.batch_size = batch_size

    def extend(self, batch: TensorDictBase) -> None:
        """Writes the collected ``batch`` (flattened to transitions) online."""
        self.buffer.extend(batch.reshape(-1))

    def sample(self, batch: TensorDictBase) -> TensorDictBase:
        """A mixed sample that replaces the collected batch for one optimisation step."""
        if self.batch_size is None:
            return self.buffer.sample()
        return self.buffer.sample(self.batch_size)

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers :meth:`extend` at ``batch_process`` and :meth:`sample` at
        ``process_optim_batch``."""
        trainer.register_op("batch_process", self.extend)
        trainer.register_op("process_optim_batch", self.sample)


class OfflineToOnlineAnnealHook(TrainerHookBase):
    """Anneals ``buffer.offline_fraction`` linearly from its value at construction to 0 over
    the first ``anneal_frames`` collected frames (at each ``batch_process``): after ``f``
    frames it is ``initial * max(0, 1 - f / anneal_frames)``.

    Args:
        buffer: the offline-to-online buffer whose ``offline_fraction`` is annealed.
        anneal_frames: collected frames until the fraction reaches 0.

    Raises:
        TypeError: ``buffer`` has no ``offline_fraction``.
        ValueError: ``anneal_frames`` is not a positive int.
    """

    def __init__(self, buffer: Any, anneal_frames: int) -> None:
        self.buffer = _check_buffer("OfflineToOnlineAnnealHook", buffer)
        self.anneal_frames = check_positive_int(
            "OfflineToOnlineAnnealHook", "anneal_frames", anneal_frames
        )
        self.initial_fraction = float(buffer.offline_fraction)
        self.frames = 0

    def __call__(self, batch: TensorDictBase) -> None:
        """Counts the batch's frames and sets the buffer's fraction for them."""
        self.frames += batch.numel()
        remaining = max(0.0, 1.0 - self.frames / self.anneal_frames)
        self.buffer.offline_fraction = self.initial_fraction * remaining

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers at ``batch_process`` (before the replay-buffer hook's sample) and saves
        the frames counted under ``name``."""
        trainer.register_op("batch_process", self)
        trainer.register_module(name or "offline_to_online_anneal", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"frames": counted, "initial_fraction": ...}``."""
        return {"frames": self.frames, "initial_fraction": self.initial_fraction}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the count and sets the buffer's fraction for it."""
        self.frames = state_dict["frames"]
        self.initial_fraction = state_dict["initial_fraction"]
        remaining = max(0.0, 1.0 - self.frames / self.anneal_frames)
        self.buffer.offline_fraction = self.initial_fraction * remaining
