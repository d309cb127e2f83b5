"""Weights through Ray's object store: ``RayTransport`` and ``RayWeightSyncScheme``.

A send puts the weights in the object store once (``ray.put``) and records the reference,
with its version, for each target worker in a mailbox actor of the scheme; a receiver (a Ray
actor, or any process of the cluster) asks the mailbox for a version newer than its own and
fetches the weights from the object store. Senders never wait on receivers: a dead receiver
cannot block a send.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from tensordict import TensorDictBase

from rl_collectors.weight_sync.scheme import WeightSyncScheme
from rl_collectors.weight_sync.strategy import WeightStrategy

# Seconds between two questions to the mailbox while a receive waits.
POLL_S = 0.01


def import_ray(where: str) -> Any:
    try:
        import ray
    except ImportError as err:
        raise ImportError(f'{where} needs Ray: pip install "rl-collectors[ray]"') from err
    if not ray.is_initialized():
        raise RuntimeError(
            f"{where}: Ray is not initialised in this process; call ray.init() (or build the "
            f"RayCollector that uses the scheme) first."
        )
    return ray


class _Mailbox:
    """A Ray actor: the newest weights reference of each worker, with its version."""

    def __init__(self) -> None:
        self.held: dict[int, tuple[int, list[Any]]] = {}

    def put(self, workers: list[int], holder: list[Any], version: int) -> None:
        # ``holder`` wraps the reference in a list so that Ray hands over the reference,
        # not the weights.
        for worker in workers:
            if worker not in self.held or self.held[worker][0] < version:
                self.held[worker] = (version, holder)

    def get(self, worker: int, known: int) -> tuple[int, list[Any]] | None:
        held = self.held.get(worker)
        return held if held is not None and held[0] > known else None


class _Outbox:
    """Sender-side: the object-store reference of the version being sent (one ``ray.put``
    for every worker of a send)."""

    def __init__(self) -> None:
        self.version = -1
        self.holder: list[Any] = []


class RayTransport:
    """Carries one worker's weights through Ray's object store and the scheme's mailbox.

    Args:
        mailbox: the scheme's mailbox actor handle.
        worker_idx: the receiving worker's index.
        outbox: shared by the transports of one scheme on the sender (one ``ray.put`` per
            send); not carried to receivers.
    """

    def __init__(self, mailbox: Any, worker_idx: int, outbox: _Outbox | None = None) -> None:
        self.mailbox = mailbox
        self.worker_idx = worker_idx
        self.outbox = outbox or _Outbox()
        self.version = 0

    def send_weights(self, weights: Any, *, version: int) -> None:
        ray = import_ray("RayTransport.send_weights")
        if self.outbox.version != version:
            if isinstance(weights, TensorDictBase):
                weights = weights.detach().cpu()
            self.outbox.holder = [ray.put(weights)]
            self.outbox.version = version
        ray.get(self.mailbox.put.remote([self.worker_idx], self.outbox.holder, version))

    def receive_weights(
        self,
        timeout: float | None = None,
        *,
        model: Any = None,
        strategy: WeightStrategy | None = None,
    ) -> Any | None:
        """Applies the newest weights sent to this worker (waiting up to ``timeout`` seconds,
        ``None`` for ever) to ``model``; ``None`` if none newer came."""
        ray = import_ray("RayTransport.receive_weights")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            held = ray.get(self.mailbox.get.remote(self.worker_idx, self.version))
            if held is not None:
                break
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(POLL_S)
        version, (ref,) = held
        weights = ray.get(ref)
        if model is not None:
            (strategy or WeightStrategy()).apply_weights(model, weights)
        self.version = version
        return weights

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["outbox"] = None  # the sender's cache does not travel
        return state


class RayWeightSyncScheme(WeightSyncScheme, backend="ray"):
    """Weights through Ray's object store, for receivers that are Ray actors (``RayCollector``
    takes it as ``weight_sync_schemes={"policy": RayWeightSyncScheme()}``).

    ``init_on_sender`` (in a process where Ray is initialised) starts the scheme's mailbox
    actor; each ``send`` puts the weights in the object store once and tells the mailbox
    which workers they are for. A receiver's ``receive(timeout)`` fetches the newest version
    sent to it. TorchRL's scheme of this name opens a ``torch.distributed`` group between
    the actors; this one uses Ray's own transfer, and its ``backend`` argument is accepted
    and ignored.

    Args:
        strategy: ``"tensordict"`` or ``"state_dict"``.
        backend: TorchRL's process-group backend (ignored).
    """

    def __init__(self, strategy: str = "tensordict", *, backend: str = "gloo") -> None:
        super().__init__(strategy)
        self.backend = backend
        self._mailbox: Any = None
        self._outbox = _Outbox()

    def create_transport(self, *, worker_idx: int, weights: Any) -> RayTransport:
        if self._mailbox is None:
            ray = import_ray(f"{type(self).__name__}.init_on_sender")
            self._mailbox = ray.remote(num_cpus=0)(_Mailbox).remote()
        return RayTransport(self._mailbox, worker_idx, self._outbox)

    def shutdown(self) -> None:
        """Ends the mailbox actor (idempotent)."""
        super().shutdown()
        if self._mailbox is not None and self._receiver_transport is None:
            import ray  # the mailbox exists, so Ray is installed

            # Ray may be shut down already: then the actor is gone with it.
            with contextlib.suppress(Exception):
                if ray.is_initialized():
                    ray.kill(self._mailbox)
            self._mailbox = None

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_outbox"] = None
        return state


__all__ = ["RayTransport", "RayWeightSyncScheme"]
