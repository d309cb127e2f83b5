"""Weights in shared memory, published without a lock: ``SharedMemTransport`` and
``SharedMemWeightSyncScheme`` (one copy read by every worker on this machine)."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_collectors.weight_sync.scheme import WeightSyncScheme
from rl_collectors.weight_sync.strategy import WeightStrategy

# Seconds between two looks at the counter while the sender is writing the weights.
WRITE_WAIT_S = 0.001


class ParentGone(Exception):
    """The sending process ended while a receiver waited for its write to finish."""


class SharedMemTransport:
    """A TensorDict of weights in shared memory guarded by a sequence counter (a seqlock).

    ``publish`` (the sender) makes the counter odd, writes the weights and makes it even
    again; ``pull`` (a receiver) copies them only while the counter is even and unchanged
    across its copy, and copies again otherwise. Nobody waits on a lock, so a receiver killed
    in the middle of its copy leaves nothing held: the next ``publish`` goes through. The
    published version is the counter halved. The counter lives in shared memory made by
    ``context`` (a ``multiprocessing`` context); the transport is handed to the receivers
    when their processes start.

    Args:
        weights: the template (a TensorDict, or a module whose weights are read); it is
            copied into shared memory.
        context: the multiprocessing context of the receivers' processes.

    Examples:
        >>> import torch
        >>> from rl_collectors.weight_sync import SharedMemTransport
        >>> source, target = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
        >>> transport = SharedMemTransport(source)
        >>> transport.publish({"weight": torch.full((1, 1), 2.0)})
        1
        >>> transport.pull(target, seen=0), float(target.weight.detach())
        (1, 2.0)
    """

    def __init__(self, weights: Any, context: Any = None) -> None:
        if isinstance(weights, nn.Module):
            weights = TensorDict.from_module(weights).data
        weights = WeightStrategy("tensordict").extract_weights(weights)
        self.weights = weights.clone().share_memory_()
        context = context if context is not None else multiprocessing.get_context()
        self.counter = context.Value("q", 0, lock=False)
        self.version = 0

    @property
    def published(self) -> int:
        """How many times the weights were published."""
        return self.counter.value // 2

    def publish(self, weights: Any) -> int:
        """Writes a model's weights (a module, or a TensorDict or state dict of all or some
        of them; sender side); returns the new version."""
        if isinstance(weights, nn.Module):
            weights = TensorDict.from_module(weights).data
        elif isinstance(weights, dict):
            weights = TensorDict(dict(weights), batch_size=[]).unflatten_keys(".")
        start = self.counter.value
        self.counter.value = start + 1  # odd: a copy is being written
        try:
            self.weights.update_(weights)
        finally:
            self.counter.value = start + 2
        return (start + 2) // 2

    def pull(self, model: nn.Module, seen: int, parent: Any = None) -> int:
        """Copies the published weights into ``model`` unless version ``seen`` is the latest
        (receiver side); returns the version it holds. ``parent`` (a process object) ends a
        wait on a write in progress with ``ParentGone`` when that process died."""
        while True:
            start = self.counter.value
            if start % 2:
                if parent is not None and not parent.is_alive():
                    raise ParentGone
                time.sleep(WRITE_WAIT_S)
                continue
            if start // 2 == seen:
                return seen
            with torch.no_grad():
                TensorDict.from_module(model).update_(self.weights)
            if self.counter.value == start:
                return start // 2

    # ------------------------------------------------------------------ TransportBackend
    def send_weights(self, weights: Any, *, version: int) -> None:
        """Publishes ``weights``; every receiver reads the same copy (``version`` is the
        scheme's count, which the publish count follows)."""
        self.publish(weights)

    def receive_weights(
        self,
        timeout: float | None = None,
        *,
        model: Any = None,
        strategy: WeightStrategy | None = None,
    ) -> TensorDictBase | None:
        """Copies newer weights into ``model``; waits up to ``timeout`` seconds (``None``:
        for ever) for a publish newer than what it holds. Returns the shared copy, or
        ``None``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.published == self.version:
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(WRITE_WAIT_S)
        self.version = self.pull(model, self.version)
        return self.weights


class SharedMemWeightSyncScheme(WeightSyncScheme, backend="shared"):
    """One copy of the weights in shared memory for every worker of this machine.

    ``send`` writes the copy once, whatever the number of workers; each worker copies it
    into its model at its next ``receive`` (before its next batch in the collectors).
    Cheapest for many workers on one machine; weights never queue (a worker sees the latest).

    Args:
        strategy: ``"tensordict"`` or ``"state_dict"``.
        context: the multiprocessing context of the workers (default: the collector's, or
            multiprocessing's default).

    Examples:
        >>> import torch
        >>> from rl_collectors.weight_sync import SharedMemWeightSyncScheme
        >>> trainer, worker = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
        >>> scheme = SharedMemWeightSyncScheme()
        >>> scheme.init_on_sender(model=trainer, num_workers=3)
        >>> len({id(t) for t in scheme.sender_transports.values()})
        1
    """

    def __init__(self, strategy: str = "tensordict", *, context: Any = None) -> None:
        super().__init__(strategy)
        self.context = context
        self._shared: SharedMemTransport | None = None

    def create_transport(self, *, worker_idx: int, weights: Any) -> SharedMemTransport:
        if self._shared is None or worker_idx == 0:
            self._shared = SharedMemTransport(weights, self.context)
        return self._shared


__all__ = ["SharedMemTransport", "SharedMemWeightSyncScheme"]
