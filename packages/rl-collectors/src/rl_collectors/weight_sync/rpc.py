"""Weights over ``torch.distributed.rpc``: ``RPCTransport`` and ``RPCWeightSyncScheme``.

The sender calls ``deliver`` on the receiver's RPC worker (one ``rpc_sync`` per send, so a
send to a dead worker raises instead of blocking); ``deliver`` keeps the newest weights of
each transport in an inbox of the receiving process, which ``receive_weights`` applies.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from tensordict import TensorDictBase

from rl_collectors.weight_sync.scheme import WeightSyncScheme
from rl_collectors.weight_sync.strategy import WeightStrategy

# Seconds a send waits for the receiver's answer before it fails.
DEFAULT_RPC_TIMEOUT_S = 60.0

# The receiving process's inbox: transport key -> (version, weights), the newest only.
_INBOX: dict[str, tuple[int, Any]] = {}
_ARRIVED = threading.Condition()


def deliver(key: str, weights: Any, version: int) -> None:
    """Runs on the receiver (called over RPC): keeps ``weights`` if they are newer."""
    with _ARRIVED:
        held = _INBOX.get(key)
        if held is None or held[0] < version:
            _INBOX[key] = (version, weights)
        _ARRIVED.notify_all()


class RPCTransport:
    """Carries one receiver's weights over ``torch.distributed.rpc``.

    Both processes must have joined the same RPC group (``rpc.init_rpc``) before the first
    send; the transport itself holds only the receiver's worker name.

    Args:
        worker_name: the receiver's RPC worker name.
        timeout: seconds a send waits for the receiver before raising.
    """

    def __init__(self, worker_name: str, *, timeout: float = DEFAULT_RPC_TIMEOUT_S) -> None:
        if not isinstance(worker_name, str) or not worker_name:
            raise ValueError(
                f"RPCTransport: expected worker_name as the receiver's RPC name, got "
                f"{worker_name!r}."
            )
        self.worker_name = worker_name
        self.timeout = timeout
        self.key = uuid.uuid4().hex
        self.version = 0

    def send_weights(self, weights: Any, *, version: int) -> None:
        """Hands ``weights`` to the receiver's inbox; raises ``RuntimeError`` naming the
        receiver when it cannot be reached (gone, or RPC not initialised)."""
        from torch.distributed import rpc

        if isinstance(weights, TensorDictBase):
            weights = weights.detach().cpu()
        try:
            rpc.rpc_sync(
                self.worker_name, deliver, args=(self.key, weights, version), timeout=self.timeout
            )
        except Exception as err:
            raise RuntimeError(
                f"RPCTransport.send_weights: sending weights version {version} to RPC worker "
                f"{self.worker_name!r} failed ({type(err).__name__}: {err}). Is it alive and in "
                f"this process's RPC group?"
            ) from err

    def receive_weights(
        self,
        timeout: float | None = None,
        *,
        model: Any = None,
        strategy: WeightStrategy | None = None,
    ) -> Any | None:
        """Applies the newest weights delivered to this process (waiting up to ``timeout``
        seconds, ``None`` for ever) to ``model``; ``None`` if none newer came."""

        def newer() -> bool:
            held = _INBOX.get(self.key)
            return held is not None and held[0] > self.version

        with _ARRIVED:
            if not _ARRIVED.wait_for(newer, timeout):
                return None
            version, weights = _INBOX.pop(self.key)
        if model is not None:
            (strategy or WeightStrategy()).apply_weights(model, weights)
        self.version = version
        return weights


class RPCWeightSyncScheme(WeightSyncScheme, backend="rpc"):
    """Weights over ``torch.distributed.rpc`` (TensorPipe): worker ``i`` is the RPC worker
    named ``worker_names[i]`` (default ``f"{name_prefix}{i + 1}"``, the names
    ``RPCCollector`` gives its nodes).

    Every process must have joined the RPC group before ``send``. ``RPCCollector`` drives
    both sides; outside it, call ``init_on_sender`` in the trainer, hand the initialised
    scheme to each worker, and call ``init_on_receiver(worker_idx=i, model=...)`` and
    ``receive`` there.

    Args:
        strategy: ``"tensordict"`` or ``"state_dict"``.
        worker_names: the receivers' RPC names, one per worker.
        name_prefix: the prefix of the default names.
        timeout: seconds a send waits for a receiver.

    Examples:
        >>> from rl_collectors.weight_sync import RPCWeightSyncScheme, WeightSyncScheme
        >>> type(WeightSyncScheme.from_backend("rpc")).__name__
        'RPCWeightSyncScheme'
    """

    def __init__(
        self,
        strategy: str = "tensordict",
        *,
        worker_names: list[str] | None = None,
        name_prefix: str = "COLLECTOR_NODE_",
        timeout: float = DEFAULT_RPC_TIMEOUT_S,
    ) -> None:
        super().__init__(strategy)
        if worker_names is not None and (
            isinstance(worker_names, str) or not all(isinstance(n, str) for n in worker_names)
        ):
            raise TypeError(
                f"RPCWeightSyncScheme: expected worker_names as a list of RPC names, got "
                f"{worker_names!r}."
            )
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise ValueError(
                f"RPCWeightSyncScheme: expected timeout as seconds > 0, got {timeout!r}."
            )
        self.worker_names = None if worker_names is None else list(worker_names)
        self.name_prefix = name_prefix
        self.timeout = timeout

    def create_transport(self, *, worker_idx: int, weights: Any) -> RPCTransport:
        if self.worker_names is None:
            name = f"{self.name_prefix}{worker_idx + 1}"
        elif worker_idx < len(self.worker_names):
            name = self.worker_names[worker_idx]
        else:
            raise ValueError(
                f"RPCWeightSyncScheme.init_on_sender: {len(self.worker_names)} worker_names "
                f"for more workers (worker {worker_idx} has no name); pass one name per worker."
            )
        return RPCTransport(name, timeout=self.timeout)


__all__ = ["RPCTransport", "RPCWeightSyncScheme"]
