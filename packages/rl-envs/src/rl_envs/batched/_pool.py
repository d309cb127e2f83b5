"""The worker processes of a ParallelEnv: start, message exchange, failure detection, shutdown."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import select
import struct
import time
from collections.abc import Iterable, Sequence
from typing import Any

import torch

from rl_envs.batched import _wire, _worker
from rl_envs.batched._wire import read_frame

# Waiting for replies, this process first polls the pipes without sleeping for up to
# WAIT_SPIN_SECONDS (yielding its CPU to any other runnable process each time), and for at
# least SPIN_AFTER_REPLY_SECONDS after each reply, before it blocks. A message to a process
# that is not asleep needs no wake-up, which on virtual machines costs tens of microseconds.
WAIT_SPIN_SECONDS = 500e-6
SPIN_AFTER_REPLY_SECONDS = 50e-6
# Pipes read as file descriptors and watched with poll (Linux, macOS); elsewhere through
# multiprocessing.connection.
_POSIX_PIPES = os.name == "posix" and hasattr(select, "poll")
# Seconds a terminated worker has to close its env before it is killed.
TERMINATE_SECONDS = 1.0

# Builtin exception types a worker's error is raised as in the parent; others: RuntimeError.
REMOTE_ERRORS: dict[str, type[Exception]] = {
    error.__name__: error
    for error in (ValueError, TypeError, KeyError, IndexError, RuntimeError, NotImplementedError)
}


def default_start_method() -> str:
    """``"fork"`` where available and CUDA is not initialised in this process, else ``"spawn"``.

    Forking a process that holds a CUDA context gives children a broken one, hence ``"spawn"``
    then; without CUDA, ``"fork"`` starts workers in milliseconds instead of seconds.

    Examples:
        >>> default_start_method() in ("fork", "spawn")
        True
    """
    if "fork" in multiprocessing.get_all_start_methods() and not torch.cuda.is_initialized():
        return "fork"
    return "spawn"


class WorkerPool:
    """Worker processes, each with a pipe to this process.

    A worker that dies makes the next exchange with it raise ``RuntimeError`` (its pipe reads
    EOF, as only the worker holds the other end); a worker that does not answer within
    ``timeout`` raises ``TimeoutError``. Either way the pool shuts down first (``closed``),
    terminating the other workers at once rather than waiting for their running commands.

    Args:
        context: the multiprocessing context.
        timeout: seconds to wait for a reply, or ``None``.
    """

    def __init__(self, context: Any, timeout: float | None) -> None:
        self.context = context
        self.timeout = timeout
        self.processes: list[Any] = []
        self.conns: list[Any] = []
        self.closed = False
        # Seconds given to the workers to stop by themselves; 0 once one is known to be stuck.
        self.grace = 5.0
        # Pipe and process-end file descriptors -> (worker index, is the pipe).
        self.fds: dict[int, tuple[int, bool]] = {}
        self.poller: Any = None

    def start(self, args: Sequence[tuple[Any, ...]]) -> None:
        """Starts worker ``i`` as ``worker_main(i, its pipe end, *args[i])``."""
        for i, worker_args in enumerate(args):
            parent_end, child_end = self.context.Pipe()
            process = self.context.Process(
                target=_worker.worker_main,
                args=(i, child_end, *worker_args),
                name=f"ParallelEnv-worker-{i}",
                daemon=True,
            )
            process.start()
            # Only the worker keeps its end: its death then closes the pipe (EOF here).
            child_end.close()
            self.processes.append(process)
            self.conns.append(parent_end)
            self.fds[parent_end.fileno()] = (i, True)
            self.fds[process.sentinel] = (i, False)
        if _POSIX_PIPES:
            self.poller = self._poller(range(len(self.processes)))

    def _poller(self, indices: Iterable[int]) -> Any:
        """A ``select.poll`` object watching the pipes and process ends of ``indices``."""
        poller = select.poll()
        for i in indices:
            poller.register(self.conns[i].fileno(), select.POLLIN)
            poller.register(self.processes[i].sentinel, select.POLLIN)
        return poller

    def exchange(
        self, indices: Iterable[int], messages: bytes | list[bytes] | None, what: str
    ) -> dict[int, bytes]:
        """Sends a message to each worker in ``indices`` and returns their replies (after OK).

        ``messages``: one for all, one per worker, or ``None`` to only wait for the replies
        (the first one of a worker says its env is built).

        Raises:
            RuntimeError: the pool is closed, a worker died, or a worker's error of a
                non-builtin type (others are raised as their own type).
            TimeoutError: a worker did not answer within ``timeout``.
        """
        if self.closed:
            raise RuntimeError(f"ParallelEnv: the env is closed; cannot go on {what}.")
        indices = list(indices)
        single = isinstance(messages, bytes)
        small = single and len(messages) <= 4096 and _POSIX_PIPES
        if small:
            # A small message goes out framed as Connection.send_bytes frames it, in one write.
            frame = struct.pack("!i", len(messages)) + messages
        for k, i in enumerate(indices if messages is not None else ()):
            try:
                if small:
                    os.write(self.conns[i].fileno(), frame)
                else:
                    self.conns[i].send_bytes(messages if single else messages[k])
            except (BrokenPipeError, ConnectionError, OSError):
                self._fail(i, what)
        replies = self._receive(indices, what)
        for i in indices:
            reply = replies[i]
            if reply[:1] == _wire.ERROR:
                name, message, trace = pickle.loads(reply[1:])
                raise REMOTE_ERRORS.get(name, RuntimeError)(
                    f"ParallelEnv: worker {i} raised {name} while {what}: {message}\n"
                    f"--- worker {i} traceback ---\n{trace}"
                )
        return {i: replies[i][1:] for i in indices}

    def _receive(self, indices: list[int], what: str) -> dict[int, bytes]:
        """The next message of each worker in ``indices``, in the order they come."""
        timeout = self.timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        if not _POSIX_PIPES:
            return {i: self._receive_one(i, what, deadline) for i in indices}
        pending = set(indices)
        poller = self.poller if len(pending) == len(self.conns) else self._poller(pending)
        fds, replies = self.fds, {}
        clock, yield_cpu = time.perf_counter, os.sched_yield
        spin_until = clock() + WAIT_SPIN_SECONDS
        while pending:
            events = poller.poll(0)
            while not events and clock() < spin_until:
                yield_cpu()
                events = poller.poll(0)
            if not events:
                wait_ms = None
                if deadline is not None:
                    wait_ms = max(int((deadline - time.monotonic()) * 1000) + 1, 0)
                events = poller.poll(wait_ms)
                if not events and deadline is not None and time.monotonic() >= deadline:
                    self._time_out(min(pending), what)
            ready = {fds[fd] for fd, _ in events}
            if any(i not in pending for i, _ in ready):
                # A worker that already replied (and died since) would keep poll from waiting.
                poller = self._poller(pending)
            for i, is_pipe in sorted(ready):
                if i not in pending or (not is_pipe and (i, True) in ready):
                    continue
                if not is_pipe and not self._has_data(i):
                    self._fail(i, what)
                try:
                    replies[i] = read_frame(self.conns[i].fileno())
                except (EOFError, OSError):
                    self._fail(i, what)
                pending.discard(i)
                spin_until = max(spin_until, clock() + SPIN_AFTER_REPLY_SECONDS)
        return replies

    def _receive_one(self, index: int, what: str, deadline: float | None) -> bytes:
        """The next message of worker ``index`` through ``multiprocessing.connection``."""
        conn, process = self.conns[index], self.processes[index]
        try:
            if deadline is not None:
                remaining = max(deadline - time.monotonic(), 0.0)
                ready = multiprocessing.connection.wait([conn, process.sentinel], remaining)
                if not ready:
                    self._time_out(index, what)
                if conn not in ready and not conn.poll():
                    self._fail(index, what)
            return conn.recv_bytes()
        except (EOFError, ConnectionError):
            self._fail(index, what)
            raise  # unreachable: _fail raises

    def _has_data(self, index: int) -> bool:
        return bool(select.select([self.conns[index].fileno()], [], [], 0)[0])

    def _time_out(self, index: int, what: str) -> None:
        process = self.processes[index]
        self.grace = 0.0
        self.close()
        raise TimeoutError(
            f"ParallelEnv: worker {index} (pid {process.pid}) did not answer within "
            f"{self.timeout} s while {what}. The env is closed."
        )

    def _fail(self, index: int, what: str) -> None:
        process = self.processes[index]
        process.join(timeout=1.0)
        code = process.exitcode
        # The others may be busy (a rollout runs inside them) and would read the close message
        # only when done: they are terminated at once instead (they close their envs).
        self.grace = 0.0
        self.close()
        raise RuntimeError(
            f"ParallelEnv: worker {index} (pid {process.pid}) died with exit code {code} while "
            f"{what}. The env is closed; build a new one."
        )

    def close(self) -> None:
        """Asks each worker to stop and joins it; those still running after ``grace`` seconds
        are terminated (they close their envs), and killed ``TERMINATE_SECONDS`` later."""
        if self.closed:
            return
        self.closed = True
        for process, conn in zip(self.processes, self.conns):
            if process.is_alive():
                with contextlib.suppress(BrokenPipeError, ConnectionError, OSError):
                    conn.send_bytes(_wire.CLOSE)
        deadline = time.monotonic() + self.grace
        for process in self.processes:
            process.join(timeout=max(deadline - time.monotonic(), 0.0))
        lingering = [process for process in self.processes if process.is_alive()]
        for process in lingering:
            process.terminate()
        deadline = time.monotonic() + TERMINATE_SECONDS
        for process in lingering:
            process.join(timeout=max(deadline - time.monotonic(), 0.0))
            if process.is_alive():
                process.kill()
                process.join()
        for conn in self.conns:
            conn.close()


__all__ = ["REMOTE_ERRORS", "WorkerPool", "default_start_method"]
