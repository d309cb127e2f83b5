"""An RPC collector node: a process that joins the trainer's ``torch.distributed.rpc`` group
and runs a collector that the trainer drives with remote calls.

``rpc_node_main`` joins the group and waits until the trainer calls ``close`` (or the trainer's
process is gone). The other functions run in the node when the trainer calls them over RPC;
one lock serialises them, so a weight update waits for the batch being collected.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import torch
from tensordict import TensorDict

from rl_collectors.distributed._node import build_collector
from rl_collectors.utils import TRAJ_IDS

POLICY_VERSION = ("collector", "policy_version")
TRAINER_NAME = "TRAINER"
NODE_PREFIX = "COLLECTOR_NODE_"
# How often a node looks whether its trainer is still there.
WATCH_S = 0.5


class _Node:
    """What the node's remote calls share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.closing = threading.Event()
        self.collector: Any = None
        self.config: dict[str, Any] = {}
        self.rank = 0
        self.nodes = 1
        self.version = 0


_NODE = _Node()


def backend_options(host: str, port: int, timeout: float, extra: dict[str, Any]) -> Any:
    """TensorPipe options of the trainer and its nodes (``extra``: the user's
    ``tensorpipe_options``)."""
    from torch.distributed import rpc

    options = {"num_worker_threads": 8, "rpc_timeout": timeout, **extra}
    return rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://{host}:{port}", **options)


def rpc_node_main(
    rank: int,
    world_size: int,
    host: str,
    port: int,
    timeout: float,
    tensorpipe_options: dict[str, Any],
    parent_pid: int | None,
) -> None:
    """Runs RPC collector node ``rank`` until the trainer closes it or is gone."""
    from torch.distributed import rpc

    torch.set_num_threads(1)
    _NODE.rank, _NODE.nodes = rank, world_size - 1
    rpc.init_rpc(
        f"{NODE_PREFIX}{rank}",
        rank=rank,
        world_size=world_size,
        rpc_backend_options=backend_options(host, port, timeout, tensorpipe_options),
    )
    try:
        while not _NODE.closing.wait(WATCH_S):
            if parent_pid is not None and os.getppid() != parent_pid:
                break  # the trainer's process is gone
    finally:
        with _NODE.lock:  # the call in progress (a batch) finishes first
            if _NODE.collector is not None:
                _NODE.collector.shutdown()
                _NODE.collector = None
        rpc.shutdown(graceful=False)


# ---------------------------------------------------------------------- remote calls
def build(config: dict[str, Any]) -> None:
    """Builds the node's collector and the receiving side of its weight-sync schemes."""
    with _NODE.lock:
        _NODE.config = config
        _NODE.collector = build_collector(config)
        for model_id, scheme in (config.get("weight_sync_schemes") or {}).items():
            scheme.init_on_receiver(
                model_id=model_id, context=_NODE.collector, worker_idx=_NODE.rank - 1
            )


def collect() -> Any:
    """The collector's next batch, tagged with the node's policy version; trajectory ids made
    unique across nodes (``id * nodes + node``)."""
    with _NODE.lock:
        batch = _NODE.collector.next()
        batch.set(POLICY_VERSION, torch.full(batch.batch_size, _NODE.version, dtype=torch.int64))
        ids = batch.get(TRAJ_IDS, None)
        if ids is not None:
            batch.set(TRAJ_IDS, ids * _NODE.nodes + (_NODE.rank - 1))
        return batch


def set_weights(weights: Any, version: int) -> None:
    """Loads ``weights`` into the node's policy; its next batches carry ``version``."""
    with _NODE.lock:
        policy = getattr(_NODE.collector, "policy", None)
        if not isinstance(policy, torch.nn.Module):
            raise TypeError(
                f"RPC collector node {_NODE.rank}: the collector's policy "
                f"({type(policy).__name__}) has no weights to load."
            )
        with torch.no_grad():
            TensorDict.from_module(policy).data.update_(weights)
        _NODE.version = version


def receive_schemes(version: int, timeout: float) -> None:
    """Applies what the weight-sync schemes delivered (waiting up to ``timeout`` s)."""
    with _NODE.lock:
        for model_id, scheme in (_NODE.config.get("weight_sync_schemes") or {}).items():
            if scheme.receive(timeout=timeout) is None:
                raise RuntimeError(
                    f"RPC collector node {_NODE.rank}: no weights for {model_id!r} arrived "
                    f"within {timeout} s of the update."
                )
        _NODE.version = version


def seed(value: int) -> int:
    """Seeds the node's torch RNG and envs and resets them; returns the next seed."""
    with _NODE.lock:
        torch.manual_seed(value)
        following = _NODE.collector.set_seed(value)
        _NODE.collector.reset()
        return following


def reset() -> None:
    with _NODE.lock:
        _NODE.collector.reset()


def close() -> None:
    """Lets ``rpc_node_main`` return (the collector is shut down there)."""
    _NODE.closing.set()
