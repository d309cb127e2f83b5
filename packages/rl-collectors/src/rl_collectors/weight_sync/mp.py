"""Weights over a multiprocessing pipe per worker: ``MPTransport`` and
``MultiProcessWeightSyncScheme``."""

from __future__ import annotations

import multiprocessing
from typing import Any

from tensordict import TensorDictBase

from rl_collectors.weight_sync.scheme import WeightSyncScheme
from rl_collectors.weight_sync.strategy import WeightStrategy


class MPTransport:
    """One one-way ``multiprocessing`` pipe from the sender to one receiver.

    Each send is a snapshot (a copy of the weights, handed over through torch's
    shared-memory pickling, so only handles go through the pipe) tagged with its version.
    The receiver drains the pipe and applies the newest snapshot: weights the sender
    overwrote before the worker looked are skipped, never applied late.

    Args:
        context: the multiprocessing context of the receiver's process (default:
            multiprocessing's default).

    Examples:
        >>> import torch
        >>> from rl_collectors.weight_sync import MPTransport
        >>> transport, target = MPTransport(), torch.nn.Linear(1, 1)
        >>> transport.send_weights({"weight": torch.ones(1, 1), "bias": torch.zeros(1)}, version=1)
        >>> transport.send_weights({"weight": torch.full((1, 1), 3.0), "bias": torch.zeros(1)}, version=2)
        >>> _ = transport.receive_weights(1.0, model=target)
        >>> transport.version, float(target.weight.detach())
        (2, 3.0)
        >>> transport.close()
    """

    def __init__(self, context: Any = None) -> None:
        context = context if context is not None else multiprocessing.get_context()
        self._reader, self._writer = context.Pipe(duplex=False)
        self.version = 0

    def send_weights(self, weights: Any, *, version: int) -> None:
        """Sends a snapshot of ``weights`` (a TensorDict or a state dict) tagged ``version``."""
        if isinstance(weights, TensorDictBase):
            snapshot: Any = weights.detach().clone()
        else:
            snapshot = {k: v.detach().clone() for k, v in weights.items()}
        self._writer.send((version, snapshot))

    def receive_weights(
        self,
        timeout: float | None = None,
        *,
        model: Any = None,
        strategy: WeightStrategy | None = None,
    ) -> Any | None:
        """Applies the newest snapshot waiting in the pipe to ``model`` (waiting up to
        ``timeout`` seconds for one, ``None``: for ever); returns it, or ``None``."""
        if not self._reader.poll(timeout):
            return None
        latest = None
        while latest is None or self._reader.poll():
            latest = self._reader.recv()
        version, weights = latest
        if model is not None:
            (strategy or WeightStrategy()).apply_weights(model, weights)
        self.version = version
        return weights

    def close(self) -> None:
        """Closes both ends of the pipe held by this process."""
        self._reader.close()
        self._writer.close()


class MultiProcessWeightSyncScheme(WeightSyncScheme, backend="process"):
    """Weights sent to each worker process through a pipe of its own (``MPTransport``).

    Every worker gets its own snapshot of each update (``send(worker_ids=...)`` reaches
    some workers only); a worker applies the newest one at its next ``receive`` (before its
    next batch in the collectors).

    Args:
        strategy: ``"tensordict"`` or ``"state_dict"``.
        context: the multiprocessing context of the workers (default: multiprocessing's).

    Examples:
        >>> import torch
        >>> from rl_collectors.weight_sync import MultiProcessWeightSyncScheme
        >>> scheme = MultiProcessWeightSyncScheme()
        >>> scheme.init_on_sender(model=torch.nn.Linear(2, 1), num_workers=2)
        >>> scheme.send(worker_ids=[1])
        1
        >>> scheme.shutdown()
    """

    def __init__(self, strategy: str = "tensordict", *, context: Any = None) -> None:
        super().__init__(strategy)
        self.context = context

    def create_transport(self, *, worker_idx: int, weights: Any) -> MPTransport:
        return MPTransport(self.context)


__all__ = ["MPTransport", "MultiProcessWeightSyncScheme"]
