"""DistributedCollector: collector nodes on ``torch.distributed`` (gloo or nccl), one process
or SLURM job per node, batches and weights over a process group of their own."""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_collectors._common import check_schemes
from rl_collectors.distributed import _wire
from rl_collectors.distributed._base import _NodeCollectorBase, _NodeWeightUpdaterBase
from rl_collectors.distributed._launch import CLOSE_TIMEOUT_S, start_nodes
from rl_collectors.distributed.default_configs import DEFAULT_SLURM_CONF
from rl_collectors.multi_sync import MultiSyncCollector
from rl_collectors.sync import SyncDataCollector
from rl_collectors.weight_sync import DistributedWeightSyncScheme, WeightSyncScheme
from rl_collectors.weight_update import WeightUpdaterBase

LAUNCHERS = ("mp", "submitit", "submitit_delayed")
_IDLE: Future = Future()  # waited on when no transfer is posted (a timed sleep)
# The file a submitit_delayed_launcher reads the trainer's address from.
RENDEZVOUS_ENV = "RL_COLLECTORS_RENDEZVOUS"


class DistributedWeightUpdater(_NodeWeightUpdaterBase):
    """Sends the policy's weights to the nodes of a ``DistributedCollector`` over its process
    group: an ``UPDATE`` command then the weights packed in one tensor, per node, each
    transfer watched so that a node that died raises (naming it) instead of blocking.

    The default updater of ``DistributedCollector``; ``push_weights(weights)`` loads
    ``weights`` into the collector's policy first. Nodes apply the weights before their next
    batch and tag it with the version (``("collector", "policy_version")``).

    Args:
        collector: the ``DistributedCollector`` whose nodes get the weights.
    """

    def __init__(self, collector: DistributedCollector) -> None:
        super().__init__(collector)
        self._packer: _wire.Packer | None = None

    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any) -> None:
        collector = self.collector
        full = self._policy_weights(server_weights)
        if self._packer is None:
            self._packer = _wire.Packer.of(full)
        collector._order(worker_id, _wire.UPDATE, collector.policy_version)
        packed = self._packer.pack(full)
        collector._watch(
            functools.partial(collector._group.send, [packed], worker_id + 1, 1), worker_id
        )


class DistributedCollector(_NodeCollectorBase):
    """Collector nodes on ``torch.distributed``: one process (``launcher="mp"``) or SLURM job
    (``launcher="submitit"``) per node, each running ``collector_class`` (a ``Collector``, or
    a ``MultiSyncCollector`` over ``num_workers_per_collector`` env processes).

    The trainer (this process, rank 0) and the nodes (ranks 1..N) form a process group of
    their own (a ``TCPStore`` rendezvous and a gloo or nccl group; the global default group is
    left alone). Each batch travels as one packed tensor. ``sync=False`` yields each node's
    batch as it comes (``frames_per_batch`` frames each, the nodes never wait for the
    trainer); ``sync=True`` asks every node for ``frames_per_batch / N`` frames and yields
    them concatenated along the first dim. A node that dies (or fails) raises on the trainer
    with its index, rank and exit, within a few milliseconds of its end.

    Args:
        create_env_fn: one env factory per node (picklable for ``"submitit"``).
        policy: the policy (an ``nn.Module`` whose weights ``update_policy_weights_`` sends,
            or any picklable callable), or ``None`` for random actions.

    Keyword Args:
        frames_per_batch: frames per yielded batch.
        total_frames: stop after this many frames; ``-1`` never.
        collector_class: what each node runs (``Collector`` or ``MultiSyncCollector``).
        collector_kwargs: more arguments of ``collector_class``.
        num_workers_per_collector: env processes per node (a ``MultiSyncCollector`` when > 1).
        sync: see above.
        backend: ``"gloo"`` (CPU) or ``"nccl"`` (GPUs).
        launcher: ``"mp"`` (local processes), ``"submitit"`` (a job per node) or
            ``"submitit_delayed"`` (nodes started by ``submitit_delayed_launcher``).
        tcp_port: the rendezvous port (default: a free one).
        host: the address nodes reach the trainer at (default ``127.0.0.1`` for ``"mp"``,
            this machine's name otherwise).
        slurm_kwargs: submitit parameters of each node's job (default
            ``DEFAULT_SLURM_CONF``).
        submitit_folder: submitit's log folder; ``submitit_cluster``: its cluster
            (``"local"`` runs the jobs on this machine, ``None`` picks SLURM when present).
        update_after_each_batch: push the weights after every batch.
        weight_updater: replaces the default ``DistributedWeightUpdater``.
        weight_sync_schemes: ``{"policy": DistributedWeightSyncScheme()}`` instead of an
            updater.
        timeout: seconds to wait for the nodes to connect and for a live but silent peer.
        mp_start_method: the start method of the ``"mp"`` nodes.

    Raises:
        ValueError: bad counts, launcher or backend; ``frames_per_batch`` not divisible by
            the number of nodes with ``sync=True``.
        RuntimeError: a node failed or died (its index, rank and exit in the message).

    Examples:
        >>> from functools import partial
        >>> from rl_core.testing import CountingEnv
        >>> from rl_collectors.distributed import DistributedCollector
        >>> make = partial(CountingEnv, max_count=4, batch_size=[2])
        >>> collector = DistributedCollector([make, make], None, frames_per_batch=8,
        ...     total_frames=16, sync=True)
        >>> [batch.batch_size for batch in collector]
        [torch.Size([4, 2]), torch.Size([4, 2])]
        >>> collector.shutdown()
    """

    def __init__(
        self,
        create_env_fn: Sequence[Callable[[], Any]],
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        frames_per_batch: int,
        total_frames: int = -1,
        collector_class: type = SyncDataCollector,
        collector_kwargs: dict[str, Any] | None = None,
        num_workers_per_collector: int = 1,
        sync: bool = False,
        backend: str = "gloo",
        launcher: str = "mp",
        tcp_port: int | None = None,
        host: str | None = None,
        slurm_kwargs: dict[str, Any] | None = None,
        submitit_folder: str | os.PathLike | None = None,
        submitit_cluster: str | None = None,
        update_after_each_batch: bool = False,
        weight_updater: WeightUpdaterBase | None = None,
        weight_sync_schemes: dict[str, WeightSyncScheme] | None = None,
        timeout: float = 1800.0,
        mp_start_method: str | None = None,
    ) -> None:
        where = type(self).__name__
        self._closed = True  # until the nodes are up (shutdown is safe on a failed init)
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
        if backend not in ("gloo", "nccl"):
            raise ValueError(f"{where}: expected backend 'gloo' or 'nccl', got {backend!r}.")
        self.sync = sync
        self.frames_per_batch = frames_per_batch
        self.policy = policy
        self.update_after_each_batch = update_after_each_batch
        self.weight_sync_schemes = check_schemes(where, weight_sync_schemes, weight_updater)
        if num_workers_per_collector > 1 and collector_class is SyncDataCollector:
            collector_class = MultiSyncCollector
        kwargs = dict(collector_kwargs or {})
        kwargs.setdefault("total_frames", -1)
        for model_id, scheme in self.weight_sync_schemes.items():
            scheme.init_on_sender(model_id=model_id, context=self, num_workers=n)
        self._frames = 0
        self._iter = 0
        self.policy_version = 0
        self._iterator: Iterator | None = None
        self._packers: list[_wire.Packer | None] = [None] * n
        # Async batches in flight: node -> (its receive, its buffer), None until posted.
        self._pending: dict[int, tuple[Future, torch.Tensor] | None] = {}
        self._nodes: list[Any] = []
        self._group = None
        self._pool = ThreadPoolExecutor(max_workers=n + 1, thread_name_prefix="rl-distributed")
        host = host or ("127.0.0.1" if launcher == "mp" else socket.gethostname())
        port = tcp_port or _wire.free_port()
        world = n + 1
        self._store = _wire.make_store(host, port, world, True, timeout)
        self.address = (host, port)
        configs = [
            {
                "create_env_fn": factory,
                "policy": policy,
                "collector_class": collector_class,
                "collector_kwargs": kwargs,
                "frames_per_batch": frames_per_batch // n if sync else frames_per_batch,
                "num_workers_per_collector": num_workers_per_collector,
                "weight_sync_schemes": self.weight_sync_schemes,
            }
            for factory in create_env_fn
        ]
        self._closed = False
        if launcher == "mp":
            args = [(i + 1, world, host, port, backend, timeout, configs[i]) for i in range(n)]
        else:
            # Jobs read their configuration from the store (all nodes share one: the env
            # factory differs per node, so each gets its own key).
            for i, config in enumerate(configs):
                self._store.set(f"config/{i + 1}", _wire.dumps(config))
            args = [(i + 1, world, host, port, backend, timeout) for i in range(n)]
        try:
            if launcher == "submitit_delayed":
                _write_rendezvous(host, port, world, backend, timeout)
            else:
                self._nodes = start_nodes(
                    where,
                    launcher,
                    args,
                    start_method=mp_start_method,
                    slurm_kwargs=dict(slurm_kwargs or DEFAULT_SLURM_CONF),
                    folder=submitit_folder,
                    cluster=submitit_cluster,
                )
            self._register_exit_hook()
            deadline = time.monotonic() + timeout
            for i in range(n):
                self._wait_key(f"ready/{i + 1}", i, deadline)
            try:
                self._group = _wire.make_group(self._store, 0, world, backend, timeout)
            except RuntimeError as err:
                # A node that failed right after joining closes its end under our feet.
                self._fail(self._why(0, err))
        except BaseException:
            self._stop(graceful=False)
            raise
        self.weight_updater = None
        if not self.weight_sync_schemes:
            self.weight_updater = weight_updater or DistributedWeightUpdater(self)
            self.weight_updater.register_collector(self)
        for scheme in self.weight_sync_schemes.values():
            if isinstance(scheme, DistributedWeightSyncScheme):
                scheme.attach(self._group)

    # ------------------------------------------------------------------ nodes
    def _gone(self, i: int) -> str | None:
        """Why node ``i`` is gone (with its error when it sent one), or ``None``."""
        if not self._nodes:
            return None
        exit_info = self._nodes[i].gone()
        if exit_info is None:
            return None
        rank = i + 1
        message = f"{type(self).__name__}: collector node {i} (rank {rank}, {exit_info})"
        key = f"error/{rank}"
        with contextlib.suppress(Exception):
            if self._store.check([key]):
                return f"{message} failed:\n{self._store.get(key).decode()}"
        return f"{message} died without reporting an error (killed, or out of memory?)."

    def _tick(self) -> str | None:
        """One look while waiting: posts the batches in flight, says if a node is gone."""
        self._post_pending()
        return self._any_gone()

    def _start(self, work: Any) -> Future:
        """``work.wait()`` in a helper thread (gloo completes point-to-point work in it)."""
        return self._pool.submit(work.wait)

    def _watch(self, work: Any | Future | Callable[[], Any], i: int) -> None:
        """Waits for a transfer with node ``i``, raising (naming the node) if any node is
        gone or the transfer failed. ``work`` may be a function that starts the transfer:
        gloo can refuse to start one with a node that just closed its end."""
        try:
            if callable(work) and not isinstance(work, Future):
                work = work()
            done = work if isinstance(work, Future) else self._start(work)
            _wire.wait_for(done, self._tick)
        except RuntimeError as err:
            self._fail(self._why(i, err))

    def _why(self, i: int, err: BaseException) -> str:
        """The message of a failed transfer with node ``i``: the node's exit when it is
        gone (gloo sees a closed connection a moment before the process is reaped)."""
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            gone = self._any_gone()
            if gone is not None:
                return gone
            time.sleep(_wire.POLL_S)
        return f"{type(self).__name__}: collector node {i} (rank {i + 1}): {err}"

    def _wait_key(self, key: str, i: int, deadline: float) -> None:
        while not self._store.check([key]):
            gone = self._gone(i)
            if gone is not None:
                self._fail(gone)
            if time.monotonic() > deadline:
                self._fail(
                    f"{type(self).__name__}: collector node {i} (rank {i + 1}) did not reach "
                    f"{key!r} within the timeout; is it running and can it reach "
                    f"{self.address[0]}:{self.address[1]}?"
                )
            time.sleep(_wire.POLL_S)

    def _order(self, i: int, code: int, argument: int = 0) -> None:
        self._check_open("command")
        self._watch(functools.partial(_wire.command, self._group, i + 1, code, argument), i)

    def _post_batch(self, i: int) -> tuple[Future, torch.Tensor] | None:
        """Posts the receive of node ``i``'s batch once its layout is known."""
        if self._packers[i] is None:
            if not self._store.check([f"meta/{i + 1}"]):
                return None
            self._packers[i] = _wire.Packer(pickle.loads(self._store.get(f"meta/{i + 1}")))
        buffer = self._packers[i].empty()
        return self._start(self._group.recv([buffer], i + 1, 0)), buffer

    def _unpack(self, i: int, buffer: torch.Tensor) -> TensorDictBase:
        return self._packers[i].unpack(buffer).clone()

    # ------------------------------------------------------------------ iteration
    def __iter__(self) -> Iterator[TensorDictBase | None]:
        self._check_open("__iter__")
        if self.sync:
            yield from self._iter_sync()
        else:
            yield from self._iter_async()

    def _count(self, frames: int) -> None:
        self._frames += frames
        self._iter += 1

    def _iter_sync(self) -> Iterator[TensorDictBase]:
        while not self._done():
            for i in range(self.num_nodes):
                self._order(i, _wire.COLLECT)
            parts = []
            for i in range(self.num_nodes):
                posted = self._post_batch(i)
                while posted is None:
                    gone = self._any_gone()
                    if gone is not None:
                        self._fail(gone)
                    time.sleep(_wire.POLL_S)
                    posted = self._post_batch(i)
                work, buffer = posted
                self._watch(work, i)
                parts.append(self._unpack(i, buffer))
            batch = torch.cat(parts, 0)
            self._count(batch.numel())
            yield batch
            if self.update_after_each_batch:
                self.update_policy_weights_()

    def _iter_async(self) -> Iterator[TensorDictBase]:
        pending = self._pending
        while not self._done():
            for i in range(self.num_nodes):
                if i not in pending:  # at the start, and after a seed or reset drained them
                    self._order(i, _wire.COLLECT)
                    pending[i] = None
            ready = None
            while ready is None:
                self._post_pending()
                ready = next((i for i, p in pending.items() if p is not None and p[0].done()), None)
                if ready is None:
                    gone = self._any_gone()
                    if gone is not None:
                        self._fail(gone)
                    futures.wait(
                        [p[0] for p in pending.values() if p is not None] or [_IDLE],
                        timeout=_wire.POLL_S,
                        return_when=futures.FIRST_COMPLETED,
                    )
            done, buffer = pending.pop(ready)
            self._watch(done, ready)
            batch = self._unpack(ready, buffer)
            self._count(batch.numel())
            if not self._done():
                self._order(ready, _wire.COLLECT)
                pending[ready] = None
            yield batch
            if self.update_after_each_batch:
                self.update_policy_weights_()
        self._drain()

    def _post_pending(self) -> None:
        """Posts the receive of every batch in flight whose layout is known: a node whose
        batch nobody receives could not take a command (a weight update) after it."""
        for i, posted in self._pending.items():
            if posted is None:
                self._pending[i] = self._post_batch(i)

    def _drain(self) -> None:
        """Receives (and drops) the batches still in flight: the nodes are idle again."""
        while self._pending:
            self._post_pending()
            for i in [i for i, p in self._pending.items() if p is not None]:
                self._watch(self._pending.pop(i)[0], i)
            gone = self._any_gone()
            if gone is not None:
                self._fail(gone)
            time.sleep(_wire.POLL_S)

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
            self._fail(gone)
        if self.weight_sync_schemes:
            if weights is not None and isinstance(self.policy, nn.Module):
                _wire.load_weights(self.policy, weights)
            ids = range(self.num_nodes) if worker_ids is None else _wire.worker_ids(worker_ids)
            for i in ids:
                self._order(i, _wire.UPDATE, self.policy_version)
                for scheme in self.weight_sync_schemes.values():
                    scheme.send(worker_ids=[i])
            return
        if self.weight_updater is None:
            raise RuntimeError(
                f"{type(self).__name__}.update_policy_weights_: the policy has no weights."
            )
        self.weight_updater.push_weights(weights, worker_ids=worker_ids)

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds node ``i``'s env and torch RNG with the seed the previous node returned
        (each node resets: its next batch starts from the seeded envs)."""
        self._drain()
        for i in range(self.num_nodes):
            self._order(i, _wire.SEED, seed)
            answer = torch.zeros(1, dtype=torch.int64)
            self._watch(functools.partial(self._group.recv, [answer], i + 1, 0), i)
            if not static_seed:
                seed = int(answer)
        return seed

    def reset(self) -> None:
        """Resets every node's envs."""
        self._drain()
        for i in range(self.num_nodes):
            self._order(i, _wire.RESET)
            self._watch(
                functools.partial(self._group.recv, [torch.zeros(1, dtype=torch.int64)], i + 1, 0),
                i,
            )

    def _stop(self, *, graceful: bool) -> None:
        if self._closed and getattr(self, "_store", None) is None:
            return
        if graceful and not self._closed and self._pending:
            # Batches in flight are received first: a node sending one takes no command.
            with contextlib.suppress(Exception):
                self._drain()
            if self._store is None:
                return  # draining found a failed node and stopped everything
        self._closed = True
        self._unregister_exit_hook()
        if graceful and self._group is not None:
            for i in range(len(self._nodes) or self.num_nodes):
                if self._gone(i) is None:
                    with contextlib.suppress(Exception):
                        done = self._start(_wire.command(self._group, i + 1, _wire.CLOSE))
                        futures.wait([done], timeout=CLOSE_TIMEOUT_S)
        for node in self._nodes:
            node.stop(CLOSE_TIMEOUT_S if graceful else 0.0)
        # Waits still blocked on a node end with its connection; nothing joins them.
        if hasattr(self, "_pool"):
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pending.clear()
        self._group = None
        self._store = None
        for scheme in self.weight_sync_schemes.values():
            scheme.shutdown()


def _write_rendezvous(host: str, port: int, world: int, backend: str, timeout: float) -> None:
    path = os.environ.get(RENDEZVOUS_ENV)
    if not path:
        raise RuntimeError(
            f'DistributedCollector: launcher="submitit_delayed" runs inside a function '
            f"decorated with submitit_delayed_launcher (it sets {RENDEZVOUS_ENV}); run the "
            f'collector with launcher="mp" or "submitit" otherwise.'
        )
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{host} {port} {world} {backend} {timeout}")
    os.replace(tmp, path)


__all__ = ["DistributedCollector", "DistributedWeightUpdater"]
