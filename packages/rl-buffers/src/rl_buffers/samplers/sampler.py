"""Sampler: the base of every replay-buffer sampler."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rl_buffers.storages.storage import Storage

__all__ = ["Sampler"]


class Sampler:
    """Chooses which items of a storage a batch holds.

    ``sample(storage, batch_size)`` returns flat item numbers in ``[0, len(storage))`` and an
    info dict (e.g. importance weights). The buffer tells the sampler about writes with
    ``extend(index)``/``add(index)`` (flat item numbers); samplers that need nothing from
    writes inherit the defaults. Subclasses implement ``sample``; stateful ones also
    ``state_dict``, ``load_state_dict`` and ``_empty``.

    Random draws go through ``self._rng``: None (torch's global generator) unless the
    buffer was given a ``generator`` (:meth:`ReplayBuffer.set_rng`), as in TorchRL.
    """

    _rng: torch.Generator | None = None

    def sample(self, storage: Storage, batch_size: int) -> tuple[Tensor, dict[str, Any]]:
        raise NotImplementedError

    def extend(self, index: Tensor) -> None:
        """Called after items ``index`` were written (does nothing by default)."""

    def add(self, index: int) -> None:
        """Called after item ``index`` was written (does nothing by default)."""

    def update_priority(self, index: Tensor, priority: Tensor) -> None:
        raise RuntimeError(
            f"{type(self).__name__} has no priorities; use a PrioritizedSampler (or "
            f"PrioritizedSliceSampler) to update priorities."
        )

    @property
    def ran_out(self) -> bool:
        """Whether an epoch ended with the last batch (samplers with replacement: never)."""
        return False

    @property
    def supports_epochs(self) -> bool:
        """Whether iterating the buffer goes through epochs (samplers without replacement)."""
        return False

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        return None

    def _empty(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def check_batch_size(where: str, batch_size: Any) -> int:
    """Returns ``batch_size`` after checking it is a positive int."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"{where}: expected batch_size to be a positive int, got {batch_size!r}.")
    return batch_size


def check_not_empty(where: str, storage: Storage) -> int:
    """Returns ``len(storage)`` after checking the storage holds an item."""
    n = len(storage)
    if n == 0:
        raise RuntimeError(
            f"{where}: Cannot sample from an empty storage (TorchRL's words; the buffer holds "
            f"no item); add or extend items first."
        )
    return n
