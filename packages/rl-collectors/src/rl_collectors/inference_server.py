"""Batched policy inference for many actors (TorchRL 0.14's ``torchrl.modules.inference_server``):
clients submit one TensorDict each, a server thread stacks what is pending, runs the policy once
and hands each client its row back.

Built here: ``InferenceTransport`` (the contract), ``ThreadingTransport`` (clients are threads
of this process), ``InferenceServer`` (its thread backend) and ``InferenceClient``.
"""

from __future__ import annotations

import abc
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import torch
from tensordict import TensorDictBase


class InferenceTransport(abc.ABC):
    """How requests reach an :class:`InferenceServer` and results go back.

    A client ``submit``\\ s a TensorDict and gets a future; the server ``drain``\\ s pending
    requests (with a callback each), waits for work with ``wait_for_work`` and answers with
    ``resolve`` or ``resolve_exception``.
    """

    @abc.abstractmethod
    def submit(self, td: TensorDictBase) -> Future:
        """Queues one request; the future holds its result."""

    @abc.abstractmethod
    def drain(self, max_items: int) -> tuple[list[TensorDictBase], list[Any]]:
        """Up to ``max_items`` pending requests and their callbacks, oldest first."""

    @abc.abstractmethod
    def wait_for_work(self, timeout: float) -> None:
        """Returns once a request is pending, or after ``timeout`` seconds."""

    @abc.abstractmethod
    def resolve(self, callback: Any, result: TensorDictBase) -> None:
        """Hands ``result`` to the client behind ``callback``."""

    @abc.abstractmethod
    def resolve_exception(self, callback: Any, exc: BaseException) -> None:
        """Raises ``exc`` in the client behind ``callback``."""

    def close(self) -> None:  # noqa: B027 (a transport without resources needs nothing)
        """Refuses new requests (pending ones are answered with an error by the server)."""

    def client(self, *, timeout: float | None = None) -> InferenceClient:
        """A client that submits through this transport."""
        return InferenceClient(self, timeout=timeout)


class ThreadingTransport(InferenceTransport):
    """Requests from threads of this process: a list under a condition variable, answered
    through ``concurrent.futures.Future``\\ s."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: list[tuple[TensorDictBase, Future]] = []
        self._closed = False

    def submit(self, td: TensorDictBase) -> Future:
        if not isinstance(td, TensorDictBase):
            raise TypeError(
                f"ThreadingTransport.submit: expected a TensorDict request, got "
                f"{type(td).__name__}."
            )
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError(
                    "ThreadingTransport.submit: the transport is closed (its server was shut "
                    "down); start a new InferenceServer."
                )
            self._pending.append((td, future))
            self._cond.notify()
        return future

    def drain(self, max_items: int) -> tuple[list[TensorDictBase], list[Future]]:
        with self._cond:
            taken, self._pending = self._pending[:max_items], self._pending[max_items:]
        return [td for td, _ in taken], [future for _, future in taken]

    def pending(self) -> int:
        """How many requests wait."""
        with self._cond:
            return len(self._pending)

    def wait_for_work(self, timeout: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: bool(self._pending) or self._closed, timeout)

    def resolve(self, callback: Future, result: TensorDictBase) -> None:
        callback.set_result(result)

    def resolve_exception(self, callback: Future, exc: BaseException) -> None:
        callback.set_exception(exc)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class InferenceClient:
    """Calls an :class:`InferenceServer` like a policy: ``client(td)`` returns the policy's
    output for ``td`` (one request: a TensorDict of the shape the server's policy takes per
    actor), computed in a batch with other clients' requests.

    Args:
        transport: the server's transport.

    Keyword Args:
        timeout: seconds to wait for a result (``None``: for ever); ``TimeoutError`` after.
    """

    def __init__(self, transport: InferenceTransport, *, timeout: float | None = None) -> None:
        self.transport = transport
        self.timeout = timeout

    def submit(self, td: TensorDictBase) -> Future:
        """Sends ``td`` without waiting; the future holds the result."""
        return self.transport.submit(td)

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        return self.submit(td).result(self.timeout)


class InferenceServer:
    """Runs ``model`` on batches of the requests its clients submit, in a thread of this
    process (TorchRL's ``service_backend="thread"``).

    The thread waits for a request, then up to ``timeout`` seconds more for
    ``min_batch_size`` of them, takes at most ``max_batch_size``, stacks them along a new
    first dim (``collate_fn``), calls ``model`` once under ``torch.no_grad()`` and hands row
    ``i`` of the output to the client of request ``i``. A model that raises fails every
    request of that batch with its error; the server goes on with the next batch.

    Args:
        model: a callable on a stacked TensorDict (a ``TensorDictModule``, a policy).
        transport: the request channel (default: a new :class:`ThreadingTransport`).

    Keyword Args:
        max_batch_size: the most requests per model call.
        min_batch_size: requests to wait for (up to ``timeout``) before a call.
        timeout: seconds the thread waits for work before it looks again.
        collate_fn: stacks a list of requests (default ``torch.stack(requests, 0)``).
        policy_version: the initial version of the model's weights (``update_model`` adds 1).

    Raises:
        ValueError: a batch size below 1, ``min_batch_size > max_batch_size`` or a timeout
            not > 0.
        TypeError: ``model`` is not callable.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_collectors.inference_server import InferenceServer
        >>> policy = TensorDictModule(lambda obs: 2 * obs, ["observation"], ["action"])
        >>> server = InferenceServer(policy).start()
        >>> client = server.client()
        >>> client(TensorDict({"observation": torch.ones(3)}, []))["action"].tolist()
        [2.0, 2.0, 2.0]
        >>> server.shutdown()
    """

    def __init__(
        self,
        model: Callable[[TensorDictBase], TensorDictBase],
        transport: InferenceTransport | None = None,
        *,
        max_batch_size: int = 64,
        min_batch_size: int = 1,
        timeout: float = 0.01,
        collate_fn: Callable[[list[TensorDictBase]], TensorDictBase] | None = None,
        policy_version: int = 0,
    ) -> None:
        where = type(self).__name__
        if not callable(model):
            raise TypeError(f"{where}: expected a callable model, got {type(model).__name__}.")
        for name, value in (("max_batch_size", max_batch_size), ("min_batch_size", min_batch_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{where}: expected {name} as an int >= 1, got {value!r}.")
        if min_batch_size > max_batch_size:
            raise ValueError(
                f"{where}: min_batch_size={min_batch_size} is above "
                f"max_batch_size={max_batch_size}."
            )
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"{where}: expected timeout as seconds > 0, got {timeout!r}.")
        self.model = model
        self.transport = transport if transport is not None else ThreadingTransport()
        self.max_batch_size = max_batch_size
        self.min_batch_size = min_batch_size
        self.timeout = float(timeout)
        self.collate_fn = collate_fn or (lambda items: torch.stack(items, 0))
        self._policy_version = policy_version
        self._lock = threading.Lock()  # the model is not changed during a call
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.batch_sizes: list[int] = []  # the size of every batch run, in order

    @property
    def policy_version(self) -> int:
        """The version of the model's weights (``update_model`` adds 1)."""
        return self._policy_version

    def client(self, *, timeout: float | None = None) -> InferenceClient:
        """A client of this server."""
        return self.transport.client(timeout=timeout)

    def start(self) -> InferenceServer:
        """Starts the server thread; returns the server."""
        if self._thread is not None:
            raise RuntimeError(f"{type(self).__name__}.start: the server was started already.")
        self._thread = threading.Thread(target=self._serve, name="inference-server", daemon=True)
        self._thread.start()
        return self

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def update_model(self, update_fn: Callable[[Any], None]) -> None:
        """Calls ``update_fn(model)`` between two batches (new weights) and adds 1 to
        ``policy_version``."""
        with self._lock:
            update_fn(self.model)
            self._policy_version += 1

    def shutdown(self, timeout: float | None = 5.0) -> None:
        """Stops the thread (after its batch in progress) and fails the requests still
        pending; idempotent."""
        self._stop.set()
        self.transport.close()
        if self._thread is not None:
            self._thread.join(timeout)
        _, callbacks = self.transport.drain(2**31)
        error = RuntimeError(f"{type(self).__name__}: shut down before the request was served.")
        for callback in callbacks:
            self.transport.resolve_exception(callback, error)

    def _serve(self) -> None:
        while not self._stop.is_set():
            self.transport.wait_for_work(self.timeout)
            pending = getattr(self.transport, "pending", None)
            if pending is not None and 0 < pending() < self.min_batch_size:
                deadline = time.monotonic() + self.timeout
                while pending() < self.min_batch_size and time.monotonic() < deadline:
                    time.sleep(self.timeout / 10)
            items, callbacks = self.transport.drain(self.max_batch_size)
            if items:
                self._run(items, callbacks)

    def _run(self, items: list[TensorDictBase], callbacks: list[Any]) -> None:
        try:
            with self._lock, torch.no_grad():
                out = self.model(self.collate_fn(items))
            self.batch_sizes.append(len(items))
            rows = out.unbind(0)
        except Exception as err:
            for callback in callbacks:
                self.transport.resolve_exception(callback, err)
            return
        for callback, row in zip(callbacks, rows):
            self.transport.resolve(callback, row)


__all__ = ["InferenceClient", "InferenceServer", "InferenceTransport", "ThreadingTransport"]
