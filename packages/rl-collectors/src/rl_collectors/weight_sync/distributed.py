"""Weights over a ``torch.distributed`` process group: ``DistributedTransport`` and
``DistributedWeightSyncScheme`` (the trainer is rank 0, worker ``i`` is rank ``i + 1``)."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_collectors.weight_sync.scheme import WeightSyncScheme
from rl_collectors.weight_sync.strategy import WeightStrategy

# The tag of weight transfers (commands and batches use tag 0).
WEIGHTS_TAG = 1


def _flat(weights: TensorDictBase) -> list[tuple[Any, torch.Tensor]]:
    return [(k, weights.get(k)) for k in sorted(weights.keys(True, True), key=str)]


class DistributedTransport:
    """Sends weights from rank 0 to one rank over a process group: a version header then
    every tensor of the TensorDict, in key order, each its own transfer.

    The process group is attached after both sides joined it (``attach``); it never travels
    with the transport (a copy handed to a worker is re-attached there).

    Args:
        rank: the receiver's rank in the group.
        weights: a template of the weights (a TensorDict).
    """

    def __init__(self, rank: int, weights: TensorDictBase) -> None:
        self.rank = rank
        self.template = weights.detach().clone().cpu()
        self.group: Any = None
        self.version = 0

    def attach(self, group: Any) -> None:
        """Uses ``group`` (a ``torch.distributed`` process group) from now on."""
        self.group = group

    def close(self) -> None:
        """Drops the process group (the collector that owns it closes it)."""
        self.group = None

    def _check(self, what: str) -> Any:
        if self.group is None:
            raise RuntimeError(
                f"DistributedTransport.{what}: no process group attached; the distributed "
                f"collectors attach theirs (or call scheme.attach(group) on both sides)."
            )
        return self.group

    def send_weights(self, weights: Any, *, version: int) -> None:
        group = self._check("send_weights")
        if isinstance(weights, dict):
            weights = TensorDict(dict(weights), batch_size=[]).unflatten_keys(".")
        group.send([torch.tensor([version], dtype=torch.int64)], self.rank, WEIGHTS_TAG).wait()
        for _, value in _flat(weights):
            group.send([value.detach().contiguous().cpu()], self.rank, WEIGHTS_TAG).wait()

    def receive_weights(
        self,
        timeout: float | None = None,
        *,
        model: Any = None,
        strategy: WeightStrategy | None = None,
    ) -> TensorDictBase | None:
        """Receives one update from rank 0 (``timeout`` is not supported: a receive waits;
        the collectors only receive after an ``UPDATE`` command)."""
        group = self._check("receive_weights")
        header = torch.zeros(1, dtype=torch.int64)
        group.recv([header], 0, WEIGHTS_TAG).wait()
        received = self.template.clone()
        for _, value in _flat(received):
            group.recv([value], 0, WEIGHTS_TAG).wait()
        if model is not None:
            (strategy or WeightStrategy()).apply_weights(model, received)
        self.version = int(header)
        return received

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["group"] = None  # a process group does not travel
        return state


class DistributedWeightSyncScheme(WeightSyncScheme, backend="distributed"):
    """Weights over the process group of a ``DistributedCollector`` (gloo or nccl).

    The collector attaches its group on both sides; each ``send`` reaches the ranks of
    ``worker_ids`` (worker ``i`` is rank ``i + 1``).

    Args:
        strategy: ``"tensordict"`` or ``"state_dict"``.
        backend: the process group's backend (informational: the collector's ``backend``
            decides).
    """

    def __init__(self, strategy: str = "tensordict", *, backend: str = "gloo") -> None:
        super().__init__(strategy)
        self.backend = backend

    def create_transport(self, *, worker_idx: int, weights: Any) -> DistributedTransport:
        if isinstance(weights, dict):
            weights = TensorDict(dict(weights), batch_size=[]).unflatten_keys(".")
        return DistributedTransport(worker_idx + 1, weights)

    def attach(self, group: Any) -> None:
        """Hands the process group to every transport (sender and receiver sides)."""
        for transport in self._sender_transports or []:
            transport.attach(group)


__all__ = ["DistributedTransport", "DistributedWeightSyncScheme"]
