"""AsyncBatchedCollector: one thread per env, policy calls batched across envs by a server."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import queue
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_collectors._common import (
    check_positive_int,
    check_total_frames,
    make_env,
    serve_env_calls,
)
from rl_collectors._multi import default_start_method
from rl_collectors.base import BaseCollector
from rl_collectors.weight_update import VanillaWeightUpdater, WeightUpdaterBase
from rl_core import EnvBase, ExplorationType, set_exploration_type
from rl_core.keys import DONE, NEXT

__all__ = ["AsyncBatchedCollector"]

ENV_INDEX = "env_index"
POLICY_VERSION = ("collector", "policy_version")
# Seconds between two looks at the stop flag while a thread waits.
POLL_S = 0.05
ENV_BACKENDS = ("threading", "multiprocessing")


class _Request:
    """One env's observation waiting for its action."""

    __slots__ = ("done", "error", "result", "td", "version")

    def __init__(self, td: TensorDictBase) -> None:
        self.td = td
        self.done = threading.Event()
        self.result: TensorDictBase | None = None
        self.version = 0
        self.error: str | None = None


class _InferenceServer:
    """Gathers the env threads' requests into batches and runs the policy once per batch.

    After the first request of a batch arrives, it waits until ``min_batch_size`` requests
    are in, then until ``timeout`` seconds have passed since the first or ``max_batch_size``
    are in, whichever comes first (the collector caps ``max_batch_size`` at the number of
    envs: no more requests can come once every env waits)."""

    def __init__(
        self,
        policy: Callable[[TensorDictBase], TensorDictBase],
        max_batch_size: int,
        min_batch_size: int,
        timeout: float,
        exploration_type: ExplorationType,
        lock: threading.Lock,
    ) -> None:
        self.policy = policy
        # Each env has at most one request waiting: a batch of them all is full.
        self.max_batch_size = max_batch_size
        self.min_batch_size = min_batch_size
        self.timeout = timeout
        self.exploration_type = exploration_type
        self.lock = lock
        self.requests: queue.Queue[_Request] = queue.Queue()
        self.version = 0
        self.batch_sizes: list[int] = []

    def submit(self, td: TensorDictBase) -> _Request:
        request = _Request(td)
        self.requests.put(request)
        return request

    def _gather(self, stop: threading.Event) -> list[_Request]:
        batch: list[_Request] = []
        deadline = 0.0
        while len(batch) < self.max_batch_size and not stop.is_set():
            if len(batch) >= self.min_batch_size:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    break
            else:
                wait = POLL_S
            try:
                request = self.requests.get(timeout=wait)
            except queue.Empty:
                continue
            if not batch:
                deadline = time.monotonic() + self.timeout
            batch.append(request)
        if stop.is_set():
            return []  # shutting down: the waiting env threads see the flag and end
        return batch

    def serve(self, stop: threading.Event) -> None:
        while not stop.is_set():
            batch = self._gather(stop)
            if not batch:
                continue
            try:
                stacked = torch.stack([request.td for request in batch], 0)
                with (
                    self.lock,
                    torch.no_grad(),
                    set_exploration_type(self.exploration_type, thread_local=True),
                ):
                    out = self.policy(stacked)
                    version = self.version
                self.batch_sizes.append(len(batch))
                for request, result in zip(batch, out.unbind(0)):
                    request.result, request.version = result, version
            except Exception:
                error = traceback.format_exc()
                for request in batch:
                    request.error = error
            for request in batch:
                request.done.set()


class AsyncBatchedCollector(BaseCollector):
    """Steps each env in a thread of its own and batches their policy calls.

    Each of the ``len(create_env_fn)`` envs gets a coordinator thread that resets it, sends
    its observation to an inference server (a thread running ``policy``) and waits for the
    action, steps the env (``step_and_maybe_reset``) and hands the transition over. The
    server stacks the requests that are waiting, up to ``max_batch_size`` (it waits for
    ``min_batch_size`` of them, and at most ``server_timeout`` seconds after the first for
    more), runs the policy once on the stack and sends each env its row. Envs that are slow
    to step do not hold up the others, and the policy runs on batches whatever the envs'
    speeds.

    Batches hold ``frames_per_batch`` transitions in the order they were made (envs
    interleaved), stacked along a new first dim: ``[frames_per_batch / env_numel,
    *env.batch_size]``, with ``"env_index"`` (which env made each) and ``("collector",
    "policy_version")`` (the weights that chose its action). With
    ``yield_completed_trajectories=True`` (unbatched envs) each yielded batch is instead one
    finished trajectory of one env, ``[T]``, as soon as it ends. ``update_policy_weights_``
    updates the policy in place between two of the server's forward passes (by default
    through a ``VanillaWeightUpdater``).

    The threads start at the first batch and run ahead of the consumer by at most a bounded
    queue of transitions. The GIL is shared: this helps envs that release it (simulators
    in C, I/O, sleeps) and batched policies (one forward for many envs); pure-Python envs
    step no faster than in ``SyncDataCollector``.

    Args:
        create_env_fn: one env factory per env (or ``EnvBase`` instances), all of the same
            batch size.

    Keyword Args:
        policy: a TensorDict policy, run on ``[k, *env.batch_size]`` stacks of requests
            (``None``: each env's ``rand_action``).
        policy_factory: a callable building the policy (instead of ``policy``).
        frames_per_batch: frames per batch (a multiple of the env batch numel).
        total_frames: stop after this many frames; ``-1`` never.
        max_batch_size: the most requests in one forward pass. Defaults to 64.
        min_batch_size: requests to wait for before a forward pass (at most the number of
            envs: each env waits for its action before it asks again). Defaults to 1.
        server_timeout: seconds to wait for more requests after the first. Defaults to 0.01.
        postproc: applied to each batch.
        exploration_type: the exploration type of the policy calls (in the server thread).
        replay_buffer: anything with ``extend(td)``; each batch is added to it and the
            iterator yields ``None``.
        yield_completed_trajectories: yield finished trajectories instead of fixed batches.
        create_env_kwargs: keyword arguments for the factories (a dict, or one per env).
        weight_updater: what ``update_policy_weights_`` calls.
        backend: the default of ``env_backend`` (TorchRL's global backend; here the policy
            server is always a thread of this process).
        env_backend: ``"threading"`` (the default: the envs live in this process, each
            stepped by its thread) or ``"multiprocessing"`` (each env is built and stepped
            in a child process of its own, its thread sending actions and receiving
            transitions over a pipe: envs that hold the GIL no longer share it). An env
            process that dies makes the iteration raise.

    Raises:
        ValueError: bad counts, envs of different batch sizes, or an unknown backend.
        TypeError: both ``policy`` and ``policy_factory``, a buffer without ``extend``, or
            env instances with ``env_backend="multiprocessing"``.
        RuntimeError: (while iterating) an env or the policy failed; the message holds the
            thread's traceback.

    Examples:
        >>> import torch
        >>> from rl_core.testing import CountingEnv
        >>> from rl_collectors import AsyncBatchedCollector
        >>> policy = lambda td: td.set("action", torch.ones(td.shape[0], 1, dtype=torch.int64))
        >>> collector = AsyncBatchedCollector(
        ...     [CountingEnv] * 3, policy=policy, frames_per_batch=6, total_frames=12
        ... )
        >>> [batch.batch_size for batch in collector]
        [torch.Size([6]), torch.Size([6])]
        >>> collector.shutdown()
    """

    def __init__(
        self,
        create_env_fn: Sequence[Callable[[], EnvBase] | EnvBase],
        *,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        policy_factory: Callable[[], Callable] | None = None,
        frames_per_batch: int,
        total_frames: int = -1,
        max_batch_size: int | None = None,
        min_batch_size: int | None = None,
        server_timeout: float | None = None,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        exploration_type: ExplorationType = ExplorationType.RANDOM,
        replay_buffer: Any = None,
        yield_completed_trajectories: bool = False,
        create_env_kwargs: dict | list[dict] | None = None,
        weight_updater: WeightUpdaterBase | None = None,
        backend: str | None = None,
        env_backend: str | None = None,
    ) -> None:
        where = type(self).__name__
        self._closed = True  # until the envs are built (shutdown is safe on a failed init)
        self._threads: list[threading.Thread] = []
        self.envs: list[EnvBase] = []
        if isinstance(create_env_fn, EnvBase | str) or not isinstance(create_env_fn, Sequence):
            raise TypeError(
                f"{where}: expected a list of env factories (one per env), got "
                f"{type(create_env_fn).__name__}."
            )
        if not create_env_fn:
            raise ValueError(f"{where}: expected at least one env factory, got an empty list.")
        if policy is not None and policy_factory is not None:
            raise TypeError(f"{where}: pass policy or policy_factory, not both.")
        check_positive_int(where, "frames_per_batch", frames_per_batch)
        self.total_frames = check_total_frames(where, total_frames)
        self.max_batch_size = check_positive_int(
            where, "max_batch_size", 64 if max_batch_size is None else max_batch_size
        )
        self.min_batch_size = check_positive_int(
            where, "min_batch_size", 1 if min_batch_size is None else min_batch_size
        )
        if self.min_batch_size > self.max_batch_size:
            raise ValueError(
                f"{where}: expected min_batch_size <= max_batch_size ({self.max_batch_size}), "
                f"got {self.min_batch_size}."
            )
        timeout = 0.01 if server_timeout is None else server_timeout
        if not isinstance(timeout, int | float) or timeout < 0:
            raise ValueError(f"{where}: expected server_timeout >= 0 seconds, got {timeout!r}.")
        if replay_buffer is not None and not callable(getattr(replay_buffer, "extend", None)):
            raise TypeError(
                f"{where}: expected replay_buffer to have an extend(td) method, got "
                f"{type(replay_buffer).__name__}."
            )
        n = len(create_env_fn)
        if self.min_batch_size > n:
            # Each env waits for its action before it asks again: more would never come.
            raise ValueError(
                f"{where}: expected min_batch_size <= the number of envs ({n}), got "
                f"{self.min_batch_size}."
            )
        kwargs_list = (
            [dict(create_env_kwargs or {}) for _ in range(n)]
            if not isinstance(create_env_kwargs, list)
            else create_env_kwargs
        )
        if len(kwargs_list) != n:
            raise ValueError(
                f"{where}: expected create_env_kwargs as a dict or a list of {n} dicts, got a "
                f"list of {len(kwargs_list)}."
            )
        env_backend = env_backend if env_backend is not None else backend
        env_backend = "threading" if env_backend is None else env_backend
        if env_backend not in ENV_BACKENDS:
            raise ValueError(
                f"{where}: expected env_backend (or backend) in {ENV_BACKENDS}, got "
                f"{env_backend!r}."
            )
        in_processes = env_backend == "multiprocessing"
        if in_processes and any(isinstance(fn, EnvBase) for fn in create_env_fn):
            raise TypeError(
                f"{where}: env_backend='multiprocessing' builds each env in its own process; "
                f"expected env factories, got an EnvBase instance."
            )
        self.env_backend = env_backend
        self._owns_env = [not isinstance(fn, EnvBase) for fn in create_env_fn]
        try:
            for fn, kwargs in zip(create_env_fn, kwargs_list):
                if in_processes:
                    self.envs.append(_ProcessEnv(fn, kwargs, f"{where}-env-{len(self.envs)}"))
                    continue
                env = fn if isinstance(fn, EnvBase) else _Factory(fn, kwargs)
                self.envs.append(make_env(where, env, None))
        except BaseException:
            self._close_envs()
            raise
        shapes = {tuple(env.batch_size) for env in self.envs}
        if len(shapes) > 1:
            self._close_envs()
            raise ValueError(f"{where}: expected envs of one batch size, got {sorted(shapes)}.")
        self.env_batch_size = self.envs[0].batch_size
        numel = self.env_batch_size.numel()
        if frames_per_batch % numel:
            self._close_envs()
            raise ValueError(
                f"{where}: expected frames_per_batch as a multiple of the env batch numel "
                f"{numel}, got {frames_per_batch}."
            )
        if yield_completed_trajectories and numel != 1:
            self._close_envs()
            raise ValueError(
                f"{where}: yield_completed_trajectories needs unbatched envs (batch size ()), "
                f"got {tuple(self.env_batch_size)}."
            )
        self.num_envs = n
        self.frames_per_batch = frames_per_batch
        self.postproc = postproc
        self.exploration_type = exploration_type
        self.replay_buffer = replay_buffer
        self.yield_completed_trajectories = yield_completed_trajectories
        self.policy = policy_factory() if policy_factory is not None else policy
        self._policy_lock = threading.Lock()
        self._server = (
            None
            if self.policy is None
            else _InferenceServer(
                self.policy,
                min(self.max_batch_size, n),
                self.min_batch_size,
                float(timeout),
                exploration_type,
                self._policy_lock,
            )
        )
        self.weight_updater = weight_updater or VanillaWeightUpdater.from_policy(self.policy)
        if self.weight_updater is not None:
            self.weight_updater.register_collector(self)
        self._steps_per_batch = frames_per_batch // numel
        self._transitions: queue.Queue = queue.Queue(maxsize=max(2 * self._steps_per_batch, n))
        self._stop = threading.Event()
        self._pending: dict[int, list[TensorDictBase]] = {i: [] for i in range(n)}
        self._frames = 0
        self._iterator: Iterator | None = None
        self._closed = False

    # ------------------------------------------------------------------ threads
    def _start(self) -> None:
        if self._threads:
            return
        if self._server is not None:
            self._threads.append(
                threading.Thread(
                    target=self._server.serve,
                    args=(self._stop,),
                    name=f"{type(self).__name__}-server",
                    daemon=True,
                )
            )
        for i in range(self.num_envs):
            self._threads.append(
                threading.Thread(
                    target=self._run_env,
                    args=(i,),
                    name=f"{type(self).__name__}-env-{i}",
                    daemon=True,
                )
            )
        for thread in self._threads:
            thread.start()

    def _put(self, item: tuple) -> bool:
        while not self._stop.is_set():
            try:
                self._transitions.put(item, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _act(self, env: EnvBase, td: TensorDictBase) -> tuple[TensorDictBase, int] | None:
        if self._server is None:
            return env.rand_action(td), 0
        request = self._server.submit(td)
        while not request.done.wait(POLL_S):
            if self._stop.is_set():
                return None
        if request.error is not None:
            raise RuntimeError(f"the policy failed:\n{request.error}")
        return request.result, request.version

    def _run_env(self, i: int) -> None:
        env = self.envs[i]
        try:
            index = torch.full(env.batch_size, i, dtype=torch.int64)
            td = env.reset()
            while not self._stop.is_set():
                acted = self._act(env, td)
                if acted is None:
                    return
                td, version = acted
                td, next_td = env.step_and_maybe_reset(td)
                td.set(ENV_INDEX, index)
                td.set(POLICY_VERSION, torch.full(env.batch_size, version, dtype=torch.int64))
                if not self._put(("data", i, td)):
                    return
                td = next_td
        except Exception:
            self._put(("error", i, traceback.format_exc()))

    def _get(self) -> tuple[int, TensorDictBase]:
        while True:
            self._check_open("__iter__")
            try:
                kind, i, payload = self._transitions.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if kind == "error":
                self.shutdown()
                raise RuntimeError(f"{type(self).__name__}: env {i} failed:\n{payload}")
            return i, payload

    # ------------------------------------------------------------------ iteration
    def _next_trajectory(self) -> TensorDictBase:
        while True:
            i, td = self._get()
            self._pending[i].append(td)
            if td.get((NEXT, DONE)).any():
                steps, self._pending[i] = self._pending[i], []
                return torch.stack(steps, 0)

    def __iter__(self) -> Iterator[TensorDictBase | None]:
        self._start()
        while self.total_frames < 0 or self._frames < self.total_frames:
            if self.yield_completed_trajectories:
                batch = self._next_trajectory()
                self._frames += batch.numel()
            else:
                steps = [self._get()[1] for _ in range(self._steps_per_batch)]
                batch = torch.stack(steps, 0)
                self._frames += self.frames_per_batch
            if self.postproc is not None:
                batch = self.postproc(batch)
            if self.replay_buffer is not None:
                self.replay_buffer.extend(batch)
                yield None
            else:
                yield batch

    # ------------------------------------------------------------------ control
    @property
    def policy_version(self) -> int:
        """How many times ``update_policy_weights_`` ran."""
        return 0 if self._server is None else self._server.version

    def update_policy_weights_(self, weights: Any = None, *, worker_ids: Any = None) -> None:
        """Updates the policy through ``weight_updater`` between two forward passes and bumps
        ``policy_version`` (actions chosen afterwards carry the new version)."""
        self._check_open("update_policy_weights_")
        if self.weight_updater is None or self._server is None:
            raise RuntimeError(
                f"{type(self).__name__}.update_policy_weights_: the policy has no weights to "
                f"update (policy {type(self.policy).__name__})."
            )
        with self._policy_lock:
            self.weight_updater.push_weights(weights, worker_ids=worker_ids)
            self._server.version += 1

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds env ``i`` with the seed env ``i - 1`` returned (before the first batch)."""
        if self._threads:
            raise RuntimeError(
                f"{type(self).__name__}.set_seed: the env threads are running; seed before "
                f"the first batch."
            )
        for env in self.envs:
            next_seed = env.set_seed(seed, static_seed=static_seed)
            seed = seed if static_seed else next_seed
        return seed

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__}.{what}: the collector was shut down.")

    def _close_envs(self) -> None:
        for env, owned in zip(self.envs, getattr(self, "_owns_env", [])):
            if owned:
                env.close()

    def shutdown(self) -> None:
        """Stops the threads (each finishes its env step) and closes the envs it built;
        idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        for thread in self._threads:
            thread.join(10.0)
        self._close_envs()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.shutdown()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_envs={self.num_envs}, frames_per_batch="
            f"{self.frames_per_batch}, frames={self._frames})"
        )


class _Factory:
    """``fn(**kwargs)`` as a zero-argument env factory."""

    def __init__(self, fn: Callable[..., EnvBase], kwargs: dict) -> None:
        self.fn, self.kwargs = fn, kwargs

    def __call__(self) -> EnvBase:
        return self.fn(**self.kwargs)


class _ProcessEnv:
    """An env built and stepped in a child process: what an env thread of the collector
    calls (``batch_size``, ``reset``, ``step_and_maybe_reset``, ``rand_action``,
    ``set_seed``, ``close``), each call one round trip over a pipe."""

    def __init__(self, fn: Callable[..., EnvBase], kwargs: dict, name: str) -> None:
        context = multiprocessing.get_context(default_start_method())
        self._conn, child = context.Pipe()
        self.process = context.Process(
            target=_env_process_main, args=(child, fn, kwargs), name=name, daemon=True
        )
        self.process.start()
        child.close()
        self._closed = False
        self.batch_size = self._call("batch_size")

    def _call(self, command: str, *args: Any) -> Any:
        try:
            self._conn.send((command, args))
            ready = multiprocessing.connection.wait([self._conn, self.process.sentinel])
            if self._conn not in ready and not self._conn.poll():
                raise EOFError
            status, payload = self._conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            self.process.join(1.0)
            raise RuntimeError(
                f"the env process {self.process.name} (pid {self.process.pid}) died with exit "
                f"code {self.process.exitcode} (killed, or out of memory?)."
            ) from None
        if status == "error":
            raise RuntimeError(f"the env process {self.process.name} failed:\n{payload}")
        return payload

    def reset(self) -> TensorDictBase:
        return self._call("reset")

    def step_and_maybe_reset(self, td: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        return self._call("step_and_maybe_reset", td)

    def rand_action(self, td: TensorDictBase) -> TensorDictBase:
        return self._call("rand_action", td)

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        return self._call("set_seed", seed, static_seed)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._conn.send(("close", ()))
        self.process.join(5.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self._conn.close()


def _env_process_main(conn: Any, fn: Callable[..., EnvBase], kwargs: dict) -> None:
    def make() -> EnvBase:
        return make_env("AsyncBatchedCollector", _Factory(fn, kwargs), None)

    def bind(env: EnvBase) -> Callable[[str, Any], Any]:
        def answer(command: str, args: Any) -> Any:
            if command == "batch_size":
                return env.batch_size
            if command == "set_seed":
                return env.set_seed(args[0], static_seed=args[1])
            return getattr(env, command)(*args)

        return answer

    serve_env_calls(conn, make, bind, "ok")
