"""RPCCollector: collector nodes driven over ``torch.distributed.rpc`` (TensorPipe), one local
process or submitit job per node; ``RPCWeightUpdater`` sends them the policy's weights."""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_collectors._common import check_schemes
from rl_collectors.distributed import _rpc_node, _wire
from rl_collectors.distributed._base import _NodeCollectorBase, _NodeWeightUpdaterBase
from rl_collectors.distributed._launch import CLOSE_TIMEOUT_S, start_nodes
from rl_collectors.distributed.default_configs import DEFAULT_SLURM_CONF
from rl_collectors.multi_async import MultiAsyncCollector
from rl_collectors.multi_sync import MultiSyncCollector
from rl_collectors.sync import SyncDataCollector
from rl_collectors.weight_sync import WeightSyncScheme
from rl_collectors.weight_update import WeightUpdaterBase

LAUNCHERS = ("mp", "submitit")
COLLECTOR_CLASSES = {
    "single": SyncDataCollector,
    "sync": MultiSyncCollector,
    "async": MultiAsyncCollector,
}
# Seconds between two looks at the nodes while a remote call runs.
POLL_S = 0.01
# Whether this process started its RPC agent already: torch cannot start a second one in the
# same process (a re-initialised TensorPipe agent refuses connections; pytorch issue 46491).
_RPC_STARTED: list[bool] = []


class RPCWeightUpdater(_NodeWeightUpdaterBase):
    """Sends the policy's weights to the nodes of an ``RPCCollector``: one remote call per
    node that loads them into the node's policy under the collector's ``policy_version``.

    All nodes are called at once and waited for together; a node that is gone raises
    (naming it) instead of blocking. The default updater of ``RPCCollector``.

    Args:
        collector: the ``RPCCollector`` whose nodes get the weights.
    """

    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any) -> None:
        collector = self.collector
        weights = self._policy_weights(server_weights).detach().clone().cpu()
        collector._call(
            worker_id, _rpc_node.set_weights, weights, collector.policy_version, wait=True
        )


class RPCCollector(_NodeCollectorBase):
    """Collector nodes on ``torch.distributed.rpc``: one process (``launcher="mp"``) or SLURM
    job (``launcher="submitit"``) per node, each running ``collector_class`` built over one
    of ``create_env_fn``'s factories; the trainer (this process, RPC worker ``"TRAINER"``)
    asks each node (``"COLLECTOR_NODE_<rank>"``) for batches with remote calls.

    ``sync=False`` yields each node's batch as it comes (``frames_per_batch`` frames each; a
    node starts its next batch as soon as it delivered one); ``sync=True`` asks every node for
    ``frames_per_batch / N`` frames and yields them concatenated along the first dim. A node
    that dies raises on the trainer, naming its index, rank and exit, within
    ``POLL_S`` of its end. ``torch.distributed.rpc`` cannot start its agent twice in one
    process: build one ``RPCCollector`` per process (a second one raises ``RuntimeError``).

    Args:
        create_env_fn: one env factory per node (picklable: nodes are spawned).
        policy: an ``nn.Module`` (its weights go to the nodes), any picklable callable, or
            ``None`` for random actions.

    Keyword Args:
        frames_per_batch: frames per yielded batch.
        total_frames: stop after this many frames; ``-1`` never.
        collector_class: what each node runs: a collector class, or ``"single"``
            (``SyncDataCollector``), ``"sync"`` (``MultiSyncCollector``), ``"async"``
            (``MultiAsyncCollector``).
        collector_kwargs: more arguments of ``collector_class``.
        num_workers_per_collector: env processes per node (a multi-process collector class
            gets this many copies of the node's factory).
        sync: see above.
        update_after_each_batch: push the weights after every batch.
        max_weight_update_interval: push the weights once this many batches were yielded
            since the last push (``-1``: never on its own).
        launcher: ``"mp"`` (spawned local processes) or ``"submitit"`` (a job per node).
        tcp_port: the rendezvous port (default: a free one).
        host: the address the nodes reach the trainer at (default ``127.0.0.1`` for
            ``"mp"``, this machine's name otherwise).
        slurm_kwargs: submitit parameters of each node's job (default ``DEFAULT_SLURM_CONF``).
        submitit_folder, submitit_cluster: submitit's log folder and cluster (``"local"``
            runs the jobs on this machine).
        tensorpipe_options: more ``TensorPipeRpcBackendOptions`` arguments.
        weight_updater: replaces the default ``RPCWeightUpdater``.
        weight_sync_schemes: ``{"policy": RPCWeightSyncScheme()}`` instead of an updater.
        timeout: seconds for the nodes to join and for one remote call.

    Raises:
        ValueError: bad counts, launcher or collector class; ``frames_per_batch`` not
            divisible by the number of nodes with ``sync=True``.
        RuntimeError: this process ran an RPC agent before; a node failed or died (its
            index, rank and exit in the message).
    """

    def __init__(
        self,
        create_env_fn: Sequence[Callable[[], Any]],
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        frames_per_batch: int,
        total_frames: int = -1,
        collector_class: type | str = SyncDataCollector,
        collector_kwargs: dict[str, Any] | None = None,
        num_workers_per_collector: int = 1,
        sync: bool = False,
        update_after_each_batch: bool = False,
        max_weight_update_interval: int = -1,
        launcher: str = "mp",
        tcp_port: int | None = None,
        host: str | None = None,
        slurm_kwargs: dict[str, Any] | None = None,
        submitit_folder: str | os.PathLike | None = None,
        submitit_cluster: str | None = None,
        tensorpipe_options: dict[str, Any] | None = None,
        weight_updater: WeightUpdaterBase | None = None,
        weight_sync_schemes: dict[str, WeightSyncScheme] | None = None,
        timeout: float = 300.0,
    ) -> None:
        from torch.distributed import rpc

        where = type(self).__name__
        self._closed = True  # until the nodes are up (shutdown is safe on a failed init)
        self._nodes: list[Any] = []
        self.num_nodes = n = self._check_arguments(
            create_env_fn,
            frames_per_batch=frames_per_batch,
            total_frames=total_frames,
            num_workers_per_collector=num_workers_per_collector,
            launcher=launcher,
            launchers=LAUNCHERS,
            timeout=timeout,
            sync=sync,
        )
        if not isinstance(max_weight_update_interval, int) or max_weight_update_interval == 0:
            raise ValueError(
                f"{where}: expected max_weight_update_interval as -1 (never) or an int >= 1, "
                f"got {max_weight_update_interval!r}."
            )
        if isinstance(collector_class, str):
            if collector_class not in COLLECTOR_CLASSES:
                raise ValueError(
                    f"{where}: expected collector_class as a class or one of "
                    f"{sorted(COLLECTOR_CLASSES)}, got {collector_class!r}."
                )
            collector_class = COLLECTOR_CLASSES[collector_class]
        if num_workers_per_collector > 1 and collector_class is SyncDataCollector:
            collector_class = MultiSyncCollector
        if _RPC_STARTED:
            raise RuntimeError(
                f"{where}: this process already ran a torch.distributed.rpc agent, and torch "
                f"cannot start a second one in the same process (pytorch issue 46491). Run one "
                f"RPCCollector per process, or use DistributedCollector (torch.distributed "
                f"process groups), which can be built again."
            )
        self.sync = sync
        self.frames_per_batch = frames_per_batch
        self.policy = policy
        self.update_after_each_batch = update_after_each_batch
        self.max_weight_update_interval = max_weight_update_interval
        self.timeout = float(timeout)
        self.weight_sync_schemes = check_schemes(where, weight_sync_schemes, weight_updater)
        for model_id, scheme in self.weight_sync_schemes.items():
            scheme.init_on_sender(model_id=model_id, context=self, num_workers=n)
        self._frames = 0
        self._iter = 0
        self._since_push = 0
        self.policy_version = 0
        self._iterator: Iterator | None = None
        self._pending: dict[int, Any] = {}  # async: node -> its collect() future
        host = host or ("127.0.0.1" if launcher == "mp" else socket.gethostname())
        port = tcp_port or _wire.free_port()
        self.address = (host, port)
        world = n + 1
        options = dict(tensorpipe_options or {})
        parent = os.getpid() if launcher == "mp" else None
        args = [(i + 1, world, host, port, self.timeout, options, parent) for i in range(n)]
        self._closed = False
        self._register_exit_hook()
        self._rpc_up = False
        try:
            self._nodes = start_nodes(
                where,
                launcher,
                args,
                start_method="spawn",  # a forked node would inherit this process's RPC state
                slurm_kwargs=dict(slurm_kwargs or DEFAULT_SLURM_CONF),
                folder=submitit_folder,
                cluster=submitit_cluster,
                target=_rpc_node.rpc_node_main,
            )
            _RPC_STARTED.append(True)
            rpc.init_rpc(
                _rpc_node.TRAINER_NAME,
                rank=0,
                world_size=world,
                rpc_backend_options=_rpc_node.backend_options(host, port, self.timeout, options),
            )
            self._rpc_up = True
            config = {
                "policy": policy,
                "collector_class": collector_class,
                "collector_kwargs": {"total_frames": -1, **(collector_kwargs or {})},
                "frames_per_batch": frames_per_batch // n if sync else frames_per_batch,
                "num_workers_per_collector": num_workers_per_collector,
                "weight_sync_schemes": self.weight_sync_schemes,
            }
            built = [
                self._call(i, _rpc_node.build, {**config, "create_env_fn": create_env_fn[i]})
                for i in range(n)
            ]
            for i, future in enumerate(built):
                self._wait(future, i)
        except BaseException:
            self._stop(graceful=False)
            raise
        self.weight_updater = None
        if not self.weight_sync_schemes:
            self.weight_updater = weight_updater or RPCWeightUpdater(self)
            self.weight_updater.register_collector(self)

    # ------------------------------------------------------------------ nodes
    @staticmethod
    def node_name(i: int) -> str:
        """The RPC worker name of node ``i`` (rank ``i + 1``)."""
        return f"{_rpc_node.NODE_PREFIX}{i + 1}"

    def _gone(self, i: int) -> str | None:
        """Why node ``i`` is gone, or ``None``."""
        exit_info = self._nodes[i].gone() if i < len(self._nodes) else None
        if exit_info is None:
            return None
        return (
            f"{type(self).__name__}: collector node {i} (rank {i + 1}, RPC worker "
            f"{self.node_name(i)!r}, {exit_info}) is gone"
        )

    def _call(self, i: int, function: Callable, *args: Any, wait: bool = False) -> Any:
        """Calls ``function(*args)`` on node ``i``; returns its future (or, with ``wait``,
        its result)."""
        from torch.distributed import rpc

        self._check_open("remote call")
        try:
            future = rpc.rpc_async(self.node_name(i), function, args=args, timeout=self.timeout)
        except RuntimeError as err:
            self._fail(self._why(i, err))
        return self._wait(future, i) if wait else future

    def _wait(self, future: Any, i: int) -> Any:
        """The result of node ``i``'s call; raises, naming the node, as soon as any node is
        gone or the call failed."""
        while not future.done():
            gone = self._any_gone()
            if gone is not None:
                self._fail(f"{gone} (while waiting for node {i}).")
            time.sleep(POLL_S)
        try:
            return future.wait()
        except Exception as err:
            self._fail(self._why(i, err))

    def _why(self, i: int, err: BaseException) -> str:
        """The message of a failed call to node ``i``: its exit when it is gone (TensorPipe
        may see the closed connection a moment before the process is reaped)."""
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            gone = self._gone(i) or self._any_gone()
            if gone is not None:
                return f"{gone}; the call failed with: {err}"
            time.sleep(POLL_S)
        return (
            f"{type(self).__name__}: collector node {i} (rank {i + 1}, RPC worker "
            f"{self.node_name(i)!r}) failed:\n{err}"
        )

    # ------------------------------------------------------------------ iteration
    def __iter__(self) -> Iterator[TensorDictBase | None]:
        self._check_open("__iter__")
        while not self._done():
            if self.sync:
                futures = [self._call(i, _rpc_node.collect) for i in range(self.num_nodes)]
                batch = torch.cat([self._wait(f, i) for i, f in enumerate(futures)], 0)
            else:
                batch = self._next_async()
            self._frames += batch.numel()
            self._iter += 1
            self._since_push += 1
            yield batch
            interval = self.max_weight_update_interval
            if self.update_after_each_batch or 0 < interval <= self._since_push:
                self.update_policy_weights_()
        self._drain()

    def _next_async(self) -> TensorDictBase:
        for i in range(self.num_nodes):
            if i not in self._pending:
                self._pending[i] = self._call(i, _rpc_node.collect)
        while True:
            ready = next((i for i, f in self._pending.items() if f.done()), None)
            if ready is not None:
                break
            gone = self._any_gone()
            if gone is not None:
                self._fail(f"{gone}.")
            time.sleep(POLL_S)
        batch = self._wait(self._pending.pop(ready), ready)
        if self.total_frames < 0 or self._frames + batch.numel() < self.total_frames:
            self._pending[ready] = self._call(ready, _rpc_node.collect)
        return batch

    def _drain(self) -> None:
        """Waits for (and drops) the batches still in flight."""
        while self._pending:
            i, future = self._pending.popitem()
            self._wait(future, i)

    # ------------------------------------------------------------------ control
    def update_policy_weights_(self, weights: Any = None, *, worker_ids: Any = None) -> None:
        """Sends the policy's weights to every node (or ``worker_ids``) as the next version;
        ``weights`` (a TensorDict or state dict) is loaded into the policy first. A node that
        is gone raises, naming it, instead of blocking."""
        self._check_open("update_policy_weights_")
        self.policy_version += 1
        self._push(weights, worker_ids)

    def _push(self, weights: Any, worker_ids: Any) -> None:
        """Sends the weights, tagged with ``policy_version``."""
        gone = self._any_gone()
        if gone is not None:
            self._fail(f"{gone}.")
        self._since_push = 0
        ids = range(self.num_nodes) if worker_ids is None else _wire.worker_ids(worker_ids)
        if self.weight_sync_schemes:
            if weights is not None and isinstance(self.policy, nn.Module):
                _wire.load_weights(self.policy, weights)
            for scheme in self.weight_sync_schemes.values():
                try:
                    scheme.send(worker_ids=list(ids))
                except RuntimeError as err:
                    self._fail(self._why(next(iter(ids)), err))
            for i in ids:
                self._call(
                    i, _rpc_node.receive_schemes, self.policy_version, self.timeout, wait=True
                )
            return
        if self.weight_updater is None:
            raise RuntimeError(
                f"{type(self).__name__}.update_policy_weights_: the policy has no weights."
            )
        self.weight_updater.push_weights(weights, worker_ids=worker_ids)

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds node ``i``'s env and torch RNG with the seed the previous node returned (each
        node resets: its next batch starts from the seeded envs)."""
        self._drain()
        for i in range(self.num_nodes):
            following = self._call(i, _rpc_node.seed, seed, wait=True)
            if not static_seed:
                seed = following
        return seed

    def reset(self) -> None:
        """Resets every node's envs (batches in flight are dropped)."""
        self._drain()
        for i in range(self.num_nodes):
            self._call(i, _rpc_node.reset, wait=True)

    def _stop(self, *, graceful: bool) -> None:
        from torch.distributed import rpc

        if self._closed and not self._nodes:
            return
        if graceful and not self._closed:
            with contextlib.suppress(Exception):
                self._drain()
        self._closed = True
        self._unregister_exit_hook()
        if getattr(self, "_rpc_up", False):
            for i in range(len(self._nodes)):
                if self._gone(i) is None:
                    with contextlib.suppress(Exception):
                        rpc.rpc_async(self.node_name(i), _rpc_node.close, timeout=CLOSE_TIMEOUT_S)
        for node in self._nodes:
            node.stop(CLOSE_TIMEOUT_S if graceful else 0.0)
        self._nodes = []
        self._pending.clear()
        if getattr(self, "_rpc_up", False):
            self._rpc_up = False
            with contextlib.suppress(Exception):
                rpc.shutdown(graceful=False)
        for scheme in self.weight_sync_schemes.values():
            scheme.shutdown()


__all__ = ["RPCCollector", "RPCWeightUpdater"]
