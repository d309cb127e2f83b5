"""The parent side of the multi-process collectors: workers, messages, weights and errors."""

from __future__ import annotations

import atexit
import contextlib
import copy
import functools
import multiprocessing
import sys
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import wait
from typing import Any

import torch
import torch.multiprocessing as torch_mp
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_collectors._common import (
    check_positive_int,
    check_schemes,
    check_total_frames,
    load_weights,
)
from rl_collectors._worker import worker_main
from rl_collectors.base import BaseCollector
from rl_collectors.profiling import ProfileConfig
from rl_collectors.utils import COLLECTOR, TRAJ_IDS, split_trajectories
from rl_collectors.weight_sync import SharedMemTransport, WeightSyncScheme
from rl_collectors.weight_update import MultiProcessedWeightUpdater, WeightUpdaterBase
from rl_core import EnvBase, ExplorationType

POLICY_VERSION = ("collector", "policy_version")
# Seconds a closing worker gets to finish its batch and exit before it is terminated.
CLOSE_TIMEOUT_S = 10.0
# Seconds the other workers get to close their envs after one failed, before they are killed.
FAIL_STOP_S = 2.0


def _env_kwargs_per_worker(where: str, create_env_kwargs: Any, n: int) -> list[dict[str, Any]]:
    """``create_env_kwargs`` as one dict per worker: a dict is given to every worker, a list
    holds one per worker.

    Raises:
        TypeError: neither a dict nor a list of dicts.
        ValueError: a list whose length is not the number of workers.
    """
    if create_env_kwargs is None:
        return [{} for _ in range(n)]
    if isinstance(create_env_kwargs, dict):
        return [dict(create_env_kwargs) for _ in range(n)]
    if isinstance(create_env_kwargs, Sequence) and not isinstance(create_env_kwargs, str):
        if not all(isinstance(kwargs, dict) for kwargs in create_env_kwargs):
            raise TypeError(
                f"{where}: expected create_env_kwargs as a dict or a list of dicts, got a list "
                f"holding {[type(k).__name__ for k in create_env_kwargs]}."
            )
        if len(create_env_kwargs) != n:
            raise ValueError(
                f"{where}: expected one create_env_kwargs dict per worker ({n}), got "
                f"{len(create_env_kwargs)}."
            )
        return [dict(kwargs) for kwargs in create_env_kwargs]
    raise TypeError(
        f"{where}: expected create_env_kwargs as a dict or a list of {n} dicts, got "
        f"{type(create_env_kwargs).__name__}."
    )


def default_start_method() -> str:
    """``"fork"`` where it exists and CUDA is not initialised (fast to start), else ``"spawn"``."""
    if "fork" in multiprocessing.get_all_start_methods() and not torch.cuda.is_initialized():
        return "fork"
    return "spawn"


class MultiCollectorBase(BaseCollector):
    """Starts one ``SyncDataCollector`` per env factory in its own process and talks to it.

    Subclasses decide how batches are gathered (``__iter__``). See ``MultiSyncDataCollector``
    for the arguments.
    """

    def __init__(
        self,
        create_env_fn: Sequence[Callable[[], EnvBase]],
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        frames_per_batch: int,
        total_frames: int = -1,
        init_random_frames: int = 0,
        max_frames_per_traj: int | None = None,
        reset_at_each_iter: bool = False,
        split_trajs: bool = False,
        exploration_type: ExplorationType = ExplorationType.RANDOM,
        device: torch.device | str | None = None,
        storing_device: torch.device | str | None = None,
        env_device: torch.device | str | None = None,
        policy_device: torch.device | str | None = None,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        reset_when_done: bool = True,
        replay_buffer: Any = None,
        extend_buffer: bool = True,
        trust_policy: bool = False,
        compile_policy: bool | dict[str, Any] = False,
        set_truncated: bool = False,
        track_traj_ids: bool = True,
        mp_start_method: str | None = None,
        weight_updater: WeightUpdaterBase | None = None,
        weight_sync_schemes: dict[str, WeightSyncScheme] | None = None,
        create_env_kwargs: dict[str, Any] | Sequence[dict[str, Any]] | None = None,
        cat_results: str | int | None = None,
    ) -> None:
        where = type(self).__name__
        self._closed = True  # until the workers are up (shutdown is safe on a failed init)
        self.cat_results = self._check_cat_results(where, cat_results)
        if isinstance(create_env_fn, EnvBase | str) or not isinstance(create_env_fn, Sequence):
            raise TypeError(
                f"{where}: expected a list of env factories (one per worker), got "
                f"{type(create_env_fn).__name__}."
            )
        if not create_env_fn:
            raise ValueError(f"{where}: expected at least one env factory, got an empty list.")
        check_positive_int(where, "frames_per_batch", frames_per_batch)
        self.total_frames = check_total_frames(where, total_frames)
        check_positive_int(where, "init_random_frames", init_random_frames, allow_zero=True)
        if replay_buffer is not None and not callable(getattr(replay_buffer, "extend", None)):
            raise TypeError(
                f"{where}: expected replay_buffer to have an extend(td) method, got "
                f"{type(replay_buffer).__name__}."
            )
        method = mp_start_method or default_start_method()
        if method not in multiprocessing.get_all_start_methods():
            raise ValueError(
                f"{where}: unknown mp_start_method {method!r}; expected one of "
                f"{multiprocessing.get_all_start_methods()}."
            )
        self.num_workers = n = len(create_env_fn)
        env_kwargs = _env_kwargs_per_worker(where, create_env_kwargs, n)
        self.frames_per_batch = frames_per_batch
        self.worker_frames = self._frames_per_worker(frames_per_batch)
        self.split_trajs = split_trajs
        self.postproc = postproc
        self.replay_buffer = replay_buffer
        self.extend_buffer = extend_buffer
        self.policy = policy
        context = torch_mp.get_context(method)
        has_weights = isinstance(policy, nn.Module) and any(
            True for _ in (*policy.parameters(), *policy.buffers())
        )
        self.weight_sync_schemes = check_schemes(where, weight_sync_schemes, weight_updater)
        for model_id, scheme in self.weight_sync_schemes.items():
            if getattr(scheme, "context", False) is None:
                scheme.context = context  # the workers' start method
            scheme.init_on_sender(model_id=model_id, context=self, num_workers=n)
        use_default = has_weights and not self.weight_sync_schemes
        self._weights = SharedMemTransport(policy, context) if use_default else None
        self.weight_updater = weight_updater or self._default_weight_updater()
        if self.weight_updater is not None:
            self.weight_updater.register_collector(self)
        kwargs = {
            "frames_per_batch": self.worker_frames,
            "init_random_frames": -(-init_random_frames // n),
            "max_frames_per_traj": max_frames_per_traj,
            "reset_at_each_iter": reset_at_each_iter,
            "exploration_type": exploration_type,
            "device": device,
            "storing_device": storing_device,
            "env_device": env_device,
            "policy_device": policy_device,
            "reset_when_done": reset_when_done,
            "trust_policy": trust_policy,
            "compile_policy": compile_policy,
            "set_truncated": set_truncated,
            "track_traj_ids": track_traj_ids or split_trajs,
        }
        seeds = torch.randint(0, 2**31 - 1, (n,)).tolist()
        self._conns, self._procs = [], []
        self._busy = [False] * n
        self._shared: list[TensorDictBase | None] = [None] * n
        self._versions = [0] * n
        self._frames = 0
        self._iter = 0
        self._iterator: Iterator | None = None
        self._closed = False
        for i, factory in enumerate(create_env_fn):
            if env_kwargs[i]:
                factory = functools.partial(factory, **env_kwargs[i])  # (picklable if it is)
            parent_end, child_end = context.Pipe()
            # Not daemonic, so that a worker may start processes of its own (a ParallelEnv);
            # the exit hook below and the workers' watch on this process end them instead.
            process = context.Process(
                target=worker_main,
                args=(
                    i,
                    child_end,
                    factory,
                    policy,
                    self._weights,
                    seeds[i],
                    kwargs,
                    self.weight_sync_schemes,
                ),
                name=f"{where}-worker-{i}",
                daemon=False,
            )
            process.start()
            child_end.close()
            self._conns.append(parent_end)
            self._procs.append(process)
            if i == 0:
                # Registered after multiprocessing's own exit hook, so it runs before that
                # hook joins the (non-daemonic) workers; a weak reference keeps the
                # collector collectable.
                self._exit_hook = functools.partial(_shutdown_at_exit, weakref.ref(self))
                atexit.register(self._exit_hook)

    def _frames_per_worker(self, frames_per_batch: int) -> int:
        return frames_per_batch

    def _check_cat_results(self, where: str, cat_results: Any) -> str | int | None:
        """TorchRL's ``cat_results``: ``"stack"`` or ``None`` here (each worker's batch is
        yielded as it is); a dim to concatenate along only for ``MultiSyncDataCollector``."""
        if cat_results is None or cat_results == "stack":
            return cat_results
        raise ValueError(
            f"{where}: cat_results only applies to MultiSyncDataCollector (it yields each "
            f"worker's batch whole); expected None or 'stack', got {cat_results!r}."
        )

    # ------------------------------------------------------------------ messages
    def _send(self, i: int, command: str, argument: Any = None) -> None:
        try:
            self._conns[i].send((command, argument))
        except (BrokenPipeError, ConnectionResetError, OSError):
            self._fail(i, None)  # the worker ended: the error it sent first is read there
        if command == "collect":
            self._busy[i] = True

    def _reply(self, i: int) -> Any:
        """The payload of worker ``i``'s reply (raises if it failed or died)."""
        conn = self._conns[i]
        try:
            status, payload = conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            self._fail(i, None)
        if status == "error":
            self._fail(i, payload)
        if status == "batch":
            self._busy[i] = False
        return payload

    def _wait_any(self, workers: list[int]) -> int:
        """The first of ``workers`` with a reply; raises as soon as any worker (waited for
        or not) exits, except a waited-for one whose reply came first."""
        conns = {self._conns[i]: i for i in workers}
        # Every worker's end is watched: one dying while another collects is reported now,
        # not when its turn comes.
        sentinels = {process.sentinel: i for i, process in enumerate(self._procs)}
        while True:
            ready = wait([*conns, *sentinels])
            for handle in ready:
                if handle in conns:
                    return conns[handle]
            # Only sentinels: a worker exited. A reply it sent before dying is read first.
            for handle in ready:
                i = sentinels[handle]
                if i in workers and self._conns[i].poll():
                    return i
                self._fail(i, None)

    def _request(self, i: int, command: str, argument: Any = None) -> Any:
        self._send(i, command, argument)
        self._wait_any([i])
        return self._reply(i)

    def _sent_error(self, i: int) -> str | None:
        """The traceback worker ``i`` sent before it ended, if one waits in its pipe."""
        conn = self._conns[i]
        with contextlib.suppress(EOFError, OSError, ValueError):
            while conn.poll():
                status, payload = conn.recv()
                if status == "error":
                    return payload
        return None

    def _fail(self, i: int, trace: str | None) -> None:
        """Stops every worker at once and raises the failure of worker ``i``."""
        process = self._procs[i]
        where = type(self).__name__
        if trace is None:
            trace = self._sent_error(i)
        if trace is None:
            process.join(1.0)
            message = (
                f"{where}: worker {i} (pid {process.pid}) died with exit code "
                f"{process.exitcode} without reporting an error (killed, or out of memory?)."
            )
        else:
            message = f"{where}: worker {i} (pid {process.pid}) failed:\n{trace}"
        self._stop(graceful=False)
        raise RuntimeError(message)

    def _check_workers(self, what: str) -> None:
        """Raises the failure of the first worker that ended while the collector is open."""
        self._check_open(what)
        for i, process in enumerate(self._procs):
            if process.exitcode is not None:
                self._fail(i, None)

    def _take(self, i: int, payload: tuple[TensorDictBase | None, int]) -> TensorDictBase:
        """The shared batch of worker ``i`` (not copied: copy before asking it again)."""
        shared, version = payload
        if shared is not None:
            self._shared[i] = shared
        self._versions[i] = version
        return self._shared[i]

    def _label(self, batch: TensorDictBase, versions: torch.Tensor, workers: torch.Tensor) -> None:
        """Writes the policy version of each frame and makes trajectory ids unique across
        workers (``id * num_workers + worker``); ``versions`` and ``workers`` broadcast
        against the batch from the left."""
        shape = batch.batch_size
        pad = (1,) * (len(shape) - versions.ndim)
        batch.set(POLICY_VERSION, versions.reshape(*versions.shape, *pad).expand(shape).clone())
        ids = batch.get(TRAJ_IDS, None)
        if ids is not None:
            batch.set(TRAJ_IDS, ids * self.num_workers + workers.reshape(*workers.shape, *pad))

    def _finish(self, batch: TensorDictBase) -> TensorDictBase | None:
        """Split, post-process and store a batch whose frames were counted."""
        if self.split_trajs:
            batch = split_trajectories(batch, prefix=COLLECTOR)
        if self.postproc is not None:
            batch = self.postproc(batch)
        if self.replay_buffer is None:
            return batch
        if self.extend_buffer:
            self.replay_buffer.extend(batch)
        else:
            for step in batch.unbind(batch.batch_dims - 1):
                self.replay_buffer.extend(step)
        return None

    # ------------------------------------------------------------------ public API
    def __iter__(self) -> Iterator[TensorDictBase | None]:
        raise NotImplementedError

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__}.{what}: the collector was shut down.")

    def _idle_workers(self, what: str) -> range:
        self._check_open(what)
        for i, busy in enumerate(self._busy):
            if busy:  # finish the batch in flight; it is dropped
                self._wait_any([i])
                self._reply(i)
        return range(self.num_workers)

    @property
    def policy_version(self) -> int:
        """How many times ``update_policy_weights_`` published weights."""
        if "policy" in self.weight_sync_schemes:
            return self.weight_sync_schemes["policy"].version
        return 0 if self._weights is None else self._weights.published

    def _default_weight_updater(self) -> MultiProcessedWeightUpdater | None:
        """Publishes the construction-time policy's weights through the seqlocked shared copy."""
        if self._weights is None:
            return None
        policy = self.policy
        device = next(iter(self._weights.weights.values(True, True))).device
        return MultiProcessedWeightUpdater(
            get_server_weights=lambda: TensorDict.from_module(policy).data,
            policy_weights={device: self._weights},
        )

    def update_policy_weights_(self, weights: Any = None, *, worker_ids: Any = None) -> None:
        """Publishes the policy's weights to every worker through its ``weight_updater``
        (by default a ``MultiProcessedWeightUpdater`` over shared memory).

        Each worker loads them before its next batch; the batch's ``("collector",
        "policy_version")`` tells which weights produced it. Publishing takes no lock a
        worker could hold, so it never waits on a worker; a worker that ended is reported
        (``RuntimeError`` naming it) instead.

        Args:
            weights: ``None`` publishes the weights of the policy passed at construction
                (after your optimizer changed them); a TensorDict or state dict is loaded
                into that policy first.
            worker_ids: passed on to the weight updater.
        """
        self._check_workers("update_policy_weights_")
        if self.weight_sync_schemes:
            if weights is not None and isinstance(self.policy, nn.Module):
                load_weights(f"{type(self).__name__}.update_policy_weights_", self.policy, weights)
            for scheme in self.weight_sync_schemes.values():
                scheme.send(worker_ids=worker_ids)
            return
        if self.weight_updater is None:
            raise RuntimeError(
                f"{type(self).__name__}.update_policy_weights_: the policy has no weights to "
                f"share (policy {type(self.policy).__name__})."
            )
        if weights is not None and isinstance(self.policy, nn.Module):
            load_weights(f"{type(self).__name__}.update_policy_weights_", self.policy, weights)
        self.weight_updater.push_weights(weights, worker_ids=worker_ids)

    def _apply_profile(self, config: ProfileConfig) -> None:
        """Asks the workers of ``config.workers`` to profile their next rollouts."""
        bad = [i for i in config.workers if i >= self.num_workers]
        if bad:
            raise ValueError(
                f"{type(self).__name__}.enable_profile: expected worker indices below "
                f"{self.num_workers}, got {bad}."
            )
        self._idle_workers("enable_profile")
        for i in config.workers:
            self._request(i, "profile", config)

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds worker ``i``'s env and torch RNG with the seed the previous one returned."""
        for i in self._idle_workers("set_seed"):
            next_seed = self._request(i, "seed", seed)
            if not static_seed:
                seed = next_seed
        return seed

    def reset(self) -> None:
        """Resets every worker's env; batches in flight are dropped."""
        for i in self._idle_workers("reset"):
            self._request(i, "reset")

    def state_dict(self) -> dict[str, Any]:
        """Counters and every worker's ``SyncDataCollector.state_dict()``."""
        workers = [self._request(i, "state_dict") for i in self._idle_workers("state_dict")]
        return {"frames": self._frames, "iter": self._iter, "workers": workers}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what ``state_dict`` returned, worker by worker."""
        if len(state["workers"]) != self.num_workers:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: expected the state of "
                f"{self.num_workers} workers, got {len(state['workers'])}."
            )
        for i in self._idle_workers("load_state_dict"):
            self._request(i, "load_state_dict", copy.deepcopy(state["workers"][i]))
        self._frames, self._iter = state["frames"], state["iter"]
        self._iterator = None

    def shutdown(self) -> None:
        """Closes every worker (terminating those that do not exit in time); idempotent."""
        self._stop(graceful=True)

    def _stop(self, *, graceful: bool) -> None:
        """Ends the workers: ``graceful`` lets each finish its batch and close (up to
        ``CLOSE_TIMEOUT_S``); otherwise each is sent ``SIGTERM`` at once (it closes its env)
        and killed after ``FAIL_STOP_S``."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(AttributeError):
            atexit.unregister(self._exit_hook)
        if graceful:
            for i, process in enumerate(self._procs):
                conn = self._conns[i]
                try:
                    if process.is_alive():
                        if self._busy[i] and conn.poll(CLOSE_TIMEOUT_S):
                            conn.recv()
                        conn.send(("close", None))
                except (OSError, EOFError, ValueError):
                    pass
            deadline = time.monotonic() + CLOSE_TIMEOUT_S
        else:
            for process in self._procs:
                if process.exitcode is None:
                    process.terminate()
            deadline = time.monotonic() + FAIL_STOP_S
        for process in self._procs:
            process.join(max(deadline - time.monotonic(), 0.0))
            if process.is_alive() and graceful:
                process.terminate()
                process.join(1.0)
            if process.is_alive():
                process.kill()
                process.join()
        for conn in self._conns:
            conn.close()
        for scheme in self.weight_sync_schemes.values():
            scheme.shutdown()

    def __del__(self) -> None:
        if sys.is_finalizing():
            return
        with contextlib.suppress(Exception):
            self.shutdown()


def _shutdown_at_exit(ref: weakref.ref) -> None:
    """The interpreter exits with a collector still open: end its workers."""
    collector = ref()
    if collector is not None:
        collector.shutdown()
