"""Env pools stepped asynchronously: send a step to some envs, receive whichever finish first.

``AsyncEnvPool`` is the contract (``async_step_send``/``async_step_recv``,
``async_reset_send``/``async_reset_recv``, rows addressed by ``"env_index"``) and a batched
env whose ``step``/``reset`` go through it; ``ThreadingAsyncEnvPool`` runs each env in a
thread of this process, ``ProcessorAsyncEnvPool`` each env in a process of its own.
"""

from __future__ import annotations

import abc
import contextlib
import multiprocessing
import pickle
import queue
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection, wait
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import NEXT, RESET
from rl_core.specs import Unbounded
from rl_envs.batched._factories import as_env_factories
from rl_envs.batched._meta import EnvMetadata
from rl_envs.batched.base import BatchedEnvBase

ENV_INDEX = "env_index"
STACKS = ("dense", "lazy", "maybe_dense")
_STEP, _RESET = "step", "reset"


class AsyncEnvPool(BatchedEnvBase):
    """Envs stepped concurrently, each at its own pace: the base of
    :class:`ThreadingAsyncEnvPool` and :class:`ProcessorAsyncEnvPool`.

    As a batched env (``step``, ``reset``, ``rollout``) it sends every env its rows and waits
    for all of them: the same transitions as the same envs stepped one after the other. The
    asynchronous calls address envs by index: ``async_step_send(td)`` hands each row of
    ``td`` to the env its ``"env_index"`` entry names (or ``env_index=``), and
    ``async_step_recv(min_get)`` returns the transitions of at least ``min_get`` envs that
    finished (all that are ready, up to ``max_get``), ordered by env index, with their
    ``"env_index"``. An env takes one call at a time. Every output carries ``"env_index"``
    (an observation: ``step_mdp`` keeps it in the next root, ready for the next send).

    Build a subclass; TorchRL's ``AsyncEnvPool(..., backend=...)`` is
    ``ThreadingAsyncEnvPool(...)`` (``"threading"``) or ``ProcessorAsyncEnvPool(...)``
    (``"multiprocessing"``).

    Args:
        env_makers: one env factory per env, or one factory and ``num_envs``.
        num_envs: the number of envs when ``env_makers`` is a single factory.

    Keyword Args:
        stack: how results are stacked: ``"dense"`` (``torch.stack``), ``"lazy"``
            (a ``LazyStackedTensorDict``) or ``"maybe_dense"`` (dense when the rows share
            their keys and shapes, lazy otherwise).
        create_env_kwargs: keyword arguments of the factories (one dict, or one per env).
    """

    def __init__(
        self,
        env_makers: Callable[..., EnvBase] | Sequence[Callable[..., EnvBase]],
        num_envs: int | None = None,
        *,
        stack: str = "dense",
        create_env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        where = type(self).__name__
        if stack not in STACKS:
            raise ValueError(f"{where}: expected stack in {STACKS}, got {stack!r}.")
        if isinstance(env_makers, Sequence) and not isinstance(env_makers, str):
            if num_envs is not None and num_envs != len(env_makers):
                raise ValueError(
                    f"{where}: got {len(env_makers)} env_makers but num_envs={num_envs}."
                )
            num_envs = len(env_makers)
        factories = as_env_factories(
            1 if num_envs is None else num_envs, env_makers, create_env_kwargs, where
        )
        meta_data = self._start(factories)
        super().__init__(len(factories), meta_data)
        self.__dict__["stack"] = stack
        self.__dict__["num_envs"] = len(factories)
        # Env index -> the kind of call it is busy with; kind -> env index -> its result.
        self.__dict__["_busy"] = {}
        self.__dict__["_ready"] = {_STEP: {}, _RESET: {}}
        index_spec = Unbounded(shape=self.batch_size, dtype=torch.int64, device=self.device)
        self.observation_spec[ENV_INDEX] = index_spec

    # ------------------------------------------------------------------ backend
    @abc.abstractmethod
    def _start(self, factories: list[Callable[[], EnvBase]]) -> EnvMetadata:
        """Starts one env per factory; returns env 0's metadata."""

    @abc.abstractmethod
    def _submit(self, i: int, kind: str, data: TensorDictBase | None) -> None:
        """Starts call ``kind`` (step, reset, seed, close) of env ``i`` with ``data``."""

    @abc.abstractmethod
    def _next_result(self, timeout: float | None) -> tuple[int, str, Any] | None:
        """One finished call ``(env index, kind, result)``, waiting up to ``timeout``
        (``None``: until one finishes); ``None`` if none finished in time."""

    def _call(self, i: int, kind: str, data: Any) -> Any:
        """Runs call ``kind`` of env ``i`` and waits for it (no other call in flight)."""
        self._submit(i, kind, data)
        while True:
            got = self._next_result(None)
            if got is not None and got[0] == i and got[1] == kind:
                return self._unwrap(got)

    def _unwrap(self, got: tuple[int, str, Any]) -> Any:
        i, kind, result = got
        if isinstance(result, _Failure):
            raise RuntimeError(f"{type(self).__name__}: env {i} failed in {kind}:\n{result.text}")
        return result

    # ------------------------------------------------------------------ async calls
    def _indices(self, tensordict: TensorDictBase | None, env_index: Any, what: str) -> list[int]:
        where = f"{type(self).__name__}.{what}"
        if env_index is None:
            if tensordict is None or ENV_INDEX not in tensordict.keys():
                raise KeyError(
                    f'{where}: expected an "{ENV_INDEX}" entry in the tensordict or env_index=, '
                    "naming the env of each row."
                )
            env_index = tensordict.get(ENV_INDEX)
        if isinstance(env_index, torch.Tensor):
            rows = env_index.reshape(env_index.shape[0], -1)[:, 0] if env_index.ndim else env_index
            env_index = rows.tolist()
        indices = [env_index] if isinstance(env_index, int) else list(env_index)
        for i in indices:
            if not isinstance(i, int) or not 0 <= i < self.num_envs:
                raise ValueError(
                    f"{where}: expected env indices in [0, {self.num_envs}), got {indices}."
                )
        if len(set(indices)) != len(indices):
            raise ValueError(f"{where}: env index repeated in {indices}.")
        busy = sorted(set(indices) & set(self._busy))
        if busy:
            raise RuntimeError(
                f"{where}: envs {busy} are still busy with a call; receive its result first."
            )
        return indices

    def _rows(self, tensordict: TensorDictBase, n: int, what: str) -> list[TensorDictBase]:
        sub_dims = len(self.meta_data.batch_size)
        if tensordict.batch_dims == sub_dims and n == 1:
            return [tensordict]
        if tensordict.batch_dims != sub_dims + 1 or tensordict.shape[0] != n:
            raise ValueError(
                f"{type(self).__name__}.{what}: expected a tensordict of batch size "
                f"[{n}, *{list(self.meta_data.batch_size)}] for {n} envs, got "
                f"{list(tensordict.batch_size)}."
            )
        return list(tensordict.unbind(0))

    def async_step_send(self, tensordict: TensorDictBase, env_index: Any = None) -> None:
        """Starts a step of the envs named by ``env_index`` (or the ``"env_index"`` entry),
        one row of ``tensordict`` each (with ``env_index`` an int, ``tensordict`` may be that
        env's unstacked data)."""
        indices = self._indices(tensordict, env_index, "async_step_send")
        for i, row in zip(indices, self._rows(tensordict, len(indices), "async_step_send")):
            self._busy[i] = _STEP
            self._submit(i, _STEP, row.exclude(ENV_INDEX))

    def async_step_recv(
        self,
        min_get: int = 1,
        env_index: int | None = None,
        *,
        max_get: int | None = None,
        timeout: float | None = None,
    ) -> TensorDictBase:
        """The transitions (with ``"next"``) of at least ``min_get`` stepped envs, or of env
        ``env_index`` alone, ordered by env index; see the class docstring."""
        return self._receive(_STEP, min_get, env_index, max_get, timeout)

    def async_reset_send(
        self, tensordict: TensorDictBase | None = None, env_index: Any = None
    ) -> None:
        """Starts a reset of the envs named by ``env_index`` or the ``"env_index"`` entry of
        ``tensordict`` (every env when both are ``None``)."""
        if tensordict is None and env_index is None:
            env_index = list(range(self.num_envs))
        indices = self._indices(tensordict, env_index, "async_reset_send")
        rows = (
            [None] * len(indices)
            if tensordict is None
            else self._rows(tensordict, len(indices), "async_reset_send")
        )
        for i, row in zip(indices, rows):
            self._busy[i] = _RESET
            self._submit(i, _RESET, None if row is None else row.exclude(ENV_INDEX))

    def async_reset_recv(
        self,
        min_get: int = 1,
        env_index: int | None = None,
        *,
        max_get: int | None = None,
        timeout: float | None = None,
    ) -> TensorDictBase:
        """The reset outputs of at least ``min_get`` envs (or of env ``env_index``)."""
        return self._receive(_RESET, min_get, env_index, max_get, timeout)

    def _receive(
        self, kind: str, min_get: int, env_index: int | None, max_get: int | None, timeout: Any
    ) -> TensorDictBase:
        where = f"{type(self).__name__}.async_{kind}_recv"
        ready = self._ready[kind]
        pending = [i for i, k in self._busy.items() if k == kind]
        if env_index is not None:
            if env_index not in pending and env_index not in ready:
                raise RuntimeError(f"{where}: env {env_index} has no {kind} in flight.")
            wanted = 1
        else:
            if not isinstance(min_get, int) or min_get < 1:
                raise ValueError(f"{where}: expected min_get >= 1, got {min_get!r}.")
            if min_get > len(pending) + len(ready):
                raise RuntimeError(
                    f"{where}: cannot wait for {min_get} envs, {len(pending) + len(ready)} "
                    f"have a {kind} in flight."
                )
            wanted = min_get

        def have() -> int:
            return int(env_index in ready) if env_index is not None else len(ready)

        while have() < wanted:
            got = self._next_result(timeout)
            if got is None:
                raise TimeoutError(f"{where}: no env finished within {timeout} s.")
            i, got_kind, _ = got
            del self._busy[i]
            self._ready[got_kind][i] = self._unwrap(got)
        # Whatever else finished meanwhile is taken too (up to max_get).
        while env_index is None and (max_get is None or len(ready) < max_get):
            got = self._next_result(0.0)
            if got is None:
                break
            del self._busy[got[0]]
            self._ready[got[1]][got[0]] = self._unwrap(got)
        if env_index is not None:
            indices = [env_index]
        else:
            indices = sorted(ready)[: max_get if max_get is not None else len(ready)]
        return self._stack([ready.pop(i) for i in indices], indices)

    def _stack(self, rows: list[TensorDictBase], indices: list[int]) -> TensorDictBase:
        if self.stack == "lazy":
            out = LazyStackedTensorDict.lazy_stack(rows, 0)
        elif self.stack == "maybe_dense":
            from tensordict import maybe_dense_stack

            out = maybe_dense_stack(rows, 0)
        else:
            out = torch.stack(rows, 0)
        index = torch.tensor(indices, dtype=torch.int64, device=out.device)
        index = index.reshape(-1, *[1] * len(self.meta_data.batch_size)).expand(out.batch_size)
        out.set(ENV_INDEX, index.clone())
        if NEXT in out.keys():
            out.get(NEXT).set(ENV_INDEX, index.clone())
        return out

    # ------------------------------------------------------------------ batched env
    def _check_idle(self, what: str) -> None:
        if self._busy or any(self._ready.values()):
            raise RuntimeError(
                f"{type(self).__name__}.{what}: envs {sorted(self._busy)} have asynchronous "
                "calls in flight (or results not received); receive them first."
            )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self._check_idle("step")
        everyone = list(range(self.num_envs))
        self.async_step_send(tensordict, everyone)
        return self.async_step_recv(self.num_envs).get(NEXT)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        self._check_idle("reset")
        masks = None if tensordict is None else tensordict.get(RESET, None)
        if masks is None:
            indices = list(range(self.num_envs))
        else:
            indices = [i for i in range(self.num_envs) if bool(masks[i].any())]
        fresh = self.full_observation_spec.zero().update(self.full_done_spec.zero())
        if not indices:
            return fresh
        if self.meta_data.batch_size or tensordict is None or masks is None:
            rows = None if tensordict is None or masks is None else tensordict[indices]
        else:
            rows = None  # an unbatched env resets fully
        self.async_reset_send(rows, indices)
        got = self.async_reset_recv(len(indices))
        fresh[indices] = got.select(*fresh.keys(True, True), strict=False)
        return fresh

    def _seed_sub_envs(self, seed: int | None, static_seed: bool) -> int | None:
        self._check_idle("set_seed")
        for i in range(self.num_envs):
            following = self._call(i, "seed", (seed, static_seed))
            if not static_seed:
                seed = following
        return seed

    def close(self) -> None:
        """Closes every env and stops the threads or processes; calling it twice is
        harmless."""
        if not self.is_closed:
            self._stop()
        super().close()

    def shutdown(self) -> None:
        """TorchRL's name of :meth:`close`."""
        self.close()

    @abc.abstractmethod
    def _stop(self) -> None:
        """Closes the envs and ends the workers."""


class _Failure:
    """An env call that raised: its traceback, re-raised on the caller's side."""

    def __init__(self, text: str) -> None:
        self.text = text


def _run(env: EnvBase, kind: str, data: Any) -> Any:
    """Call ``kind`` of ``env``: what a thread or a worker process runs."""
    try:
        if kind == _STEP:
            return env.step(data)
        if kind == _RESET:
            return env.reset(data)
        if kind == "seed":
            seed, static_seed = data
            return env.set_seed(seed, static_seed=static_seed)
        if kind == "close":
            env.close()
            return None
        raise ValueError(f"unknown call {kind!r}")
    except Exception:
        return _Failure(traceback.format_exc())


class ThreadingAsyncEnvPool(AsyncEnvPool):
    """An :class:`AsyncEnvPool` whose envs run in threads of this process (one thread per
    env): cheap to start, and concurrent where envs release the GIL (simulators in C, I/O,
    LLM servers).

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> from rl_envs.batched import ThreadingAsyncEnvPool
        >>> pool = ThreadingAsyncEnvPool(CountingEnv, 3)
        >>> td = pool.reset()
        >>> td["env_index"].tolist()
        [0, 1, 2]
        >>> td["action"] = torch.ones(3, 1, dtype=torch.long)
        >>> pool.async_step_send(td[[0, 2]])
        >>> out = pool.async_step_recv(min_get=2)
        >>> out["env_index"].tolist(), out["next", "observation"].squeeze(-1).tolist()
        ([0, 2], [1.0, 1.0])
        >>> pool.close()
    """

    def _start(self, factories: list[Callable[[], EnvBase]]) -> EnvMetadata:
        envs = [factory() for factory in factories]
        self.__dict__["_envs"] = envs
        self.__dict__["_pool"] = ThreadPoolExecutor(len(envs), thread_name_prefix="env-pool")
        self.__dict__["_results"] = queue.SimpleQueue()
        return EnvMetadata.from_env(envs[0])

    def _submit(self, i: int, kind: str, data: Any) -> None:
        def call() -> None:
            self._results.put((i, kind, _run(self._envs[i], kind, data)))

        self._pool.submit(call)

    def _next_result(self, timeout: float | None) -> tuple[int, str, Any] | None:
        try:
            if timeout == 0.0:
                return self._results.get_nowait()
            return self._results.get(timeout=timeout)
        except queue.Empty:
            return None

    def _stop(self) -> None:
        self._pool.shutdown(wait=True)
        for env in self._envs:
            env.close()


class _Arrays:
    """A TensorDict of CPU tensors as numpy arrays by key (pickled much faster than the
    TensorDict), rebuilt on the other side."""

    def __init__(self, td: TensorDictBase) -> None:
        self.batch_size = tuple(td.batch_size)
        self.leaves = {key: td.get(key).numpy() for key in td.keys(True, True)}

    @staticmethod
    def fits(td: TensorDictBase) -> bool:
        return td.device in (None, torch.device("cpu")) and all(
            isinstance(v, torch.Tensor) and v.dtype != torch.bfloat16 and not v.requires_grad
            for v in td.values(True, True)
        )

    def rebuild(self) -> TensorDict:
        td = TensorDict({}, batch_size=self.batch_size)
        for key, value in self.leaves.items():
            td.set(key, torch.from_numpy(value))
        return td


def _send(conn: Connection, kind: str, data: Any) -> None:
    """Sends ``(kind, data)`` pickled by value: the receiver gets its own copy of every
    tensor (``Connection.send`` would move tensors into shared memory, that the env then
    writes into at its next step, under the receiver's feet)."""
    if isinstance(data, TensorDictBase) and _Arrays.fits(data):
        data = _Arrays(data)
    conn.send_bytes(pickle.dumps((kind, data), protocol=pickle.HIGHEST_PROTOCOL))


def _recv(conn: Connection) -> tuple[str, Any]:
    kind, data = pickle.loads(conn.recv_bytes())
    return kind, data.rebuild() if isinstance(data, _Arrays) else data


def _worker(conn: Connection, factory: Callable[[], EnvBase]) -> None:
    """Builds one env and runs the parent's calls until ``close`` or the pipe closes."""
    torch.set_num_threads(1)
    try:
        env = factory()
        _send(conn, "meta", EnvMetadata.from_env(env))
    except Exception:
        _send(conn, "meta", _Failure(traceback.format_exc()))
        return
    try:
        while True:
            kind, data = _recv(conn)
            _send(conn, kind, _run(env, kind, data))
            if kind == "close":
                return
    except (EOFError, OSError):
        env.close()  # the parent is gone


class ProcessorAsyncEnvPool(AsyncEnvPool):
    """An :class:`AsyncEnvPool` whose envs run in processes of their own (one per env),
    talking to this one over pipes: concurrent for envs that hold the GIL.

    Keyword Args:
        mp_start_method: the start method of the env processes (default: the platform's);
            factories must be picklable under ``"spawn"``.

    Raises:
        RuntimeError: an env could not be built, or failed in a call (its index and
            traceback in the message).
    """

    def __init__(self, *args: Any, mp_start_method: str | None = None, **kwargs: Any) -> None:
        self.__dict__["_start_method"] = mp_start_method
        super().__init__(*args, **kwargs)

    def _start(self, factories: list[Callable[[], EnvBase]]) -> EnvMetadata:
        context = multiprocessing.get_context(self._start_method)
        conns, processes = [], []
        self.__dict__["_conns"] = conns
        self.__dict__["_processes"] = processes
        self.__dict__["_kinds"] = {}  # env index -> the call it runs
        for factory in factories:
            parent, child = context.Pipe()
            process = context.Process(target=_worker, args=(child, factory), daemon=True)
            process.start()
            child.close()
            conns.append(parent)
            processes.append(process)
        metas = []
        for i, conn in enumerate(conns):
            try:
                got = _recv(conn)[1]
            except EOFError:
                got = _Failure(f"exit code {processes[i].exitcode}")
            if isinstance(got, _Failure):
                self._stop()
                raise RuntimeError(
                    f"{type(self).__name__}: env {i} could not be built in its process:\n{got.text}"
                )
            metas.append(got)
        return metas[0]

    def _submit(self, i: int, kind: str, data: Any) -> None:
        self._kinds[i] = kind
        _send(self._conns[i], kind, data)

    def _next_result(self, timeout: float | None) -> tuple[int, str, Any] | None:
        waiting = {self._conns[i]: i for i in self._kinds}
        if not waiting:
            return None
        ready = wait(list(waiting), timeout)
        if not ready:
            return None
        conn = ready[0]
        i = waiting[conn]
        try:
            result = _recv(conn)[1]
        except EOFError:
            self._processes[i].join(1)
            result = _Failure(f"its process ended (exit code {self._processes[i].exitcode})")
        return i, self._kinds.pop(i), result

    def _stop(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(OSError):
                _send(conn, "close", None)
        for process in self._processes:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
        for conn in self._conns:
            conn.close()


__all__ = ["AsyncEnvPool", "ProcessorAsyncEnvPool", "ThreadingAsyncEnvPool"]
