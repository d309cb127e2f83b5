"""``NoWeightSyncScheme``: the workers keep the weights they started with."""

from __future__ import annotations

from typing import Any

from rl_collectors.weight_sync.scheme import WeightSyncScheme
from rl_collectors.weight_sync.strategy import WeightStrategy


class _NoTransport:
    """Drops what is sent; nothing ever arrives."""

    version = 0

    def send_weights(self, weights: Any, *, version: int) -> None:
        return None

    def receive_weights(
        self,
        timeout: float | None = None,
        *,
        model: Any = None,
        strategy: WeightStrategy | None = None,
    ) -> None:
        return None


class NoWeightSyncScheme(WeightSyncScheme, backend="none"):
    """Sends nothing: for frozen policies, or when weights reach the workers another way.

    ``send`` counts versions on the sender (as every scheme) but no receiver ever gets
    weights: its ``version`` stays 0.

    Examples:
        >>> import torch
        >>> from rl_collectors.weight_sync import NoWeightSyncScheme
        >>> trainer, worker = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
        >>> scheme = NoWeightSyncScheme()
        >>> scheme.init_on_sender(model=trainer)
        >>> scheme.init_on_receiver(model=worker)
        >>> scheme.send(), scheme.receive(), scheme.version
        (1, None, 0)
    """

    def create_transport(self, *, worker_idx: int, weights: Any) -> _NoTransport:
        return _NoTransport()


__all__ = ["NoWeightSyncScheme"]
