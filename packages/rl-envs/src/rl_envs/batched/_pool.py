"""The worker processes of a ParallelEnv: start, message exchange, failure detection, shutdown."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import pickle
import time
from collections.abc import Iterable, Sequence
from typing import Any

import torch

from rl_envs.batched import _worker

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
    ``timeout`` raises ``TimeoutError``. Either way the pool shuts down first (``closed``).

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
        for k, i in enumerate(indices if messages is not None else ()):
            message = messages if isinstance(messages, bytes) else messages[k]
            try:
                self.conns[i].send_bytes(message)
            except (BrokenPipeError, ConnectionError, OSError):
                self._fail(i, what)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        replies = {i: self._receive(i, what, deadline) for i in indices}
        for i, reply in replies.items():
            if reply[:1] == _worker.ERROR:
                name, message, trace = pickle.loads(reply[1:])
                raise REMOTE_ERRORS.get(name, RuntimeError)(
                    f"ParallelEnv: worker {i} raised {name} while {what}: {message}\n"
                    f"--- worker {i} traceback ---\n{trace}"
                )
        return {i: reply[1:] for i, reply in replies.items()}

    def _receive(self, index: int, what: str, deadline: float | None) -> bytes:
        conn, process = self.conns[index], self.processes[index]
        try:
            if deadline is not None:
                remaining = max(deadline - time.monotonic(), 0.0)
                ready = multiprocessing.connection.wait([conn, process.sentinel], remaining)
                if not ready:
                    self.grace = 0.0
                    self.close()
                    raise TimeoutError(
                        f"ParallelEnv: worker {index} (pid {process.pid}) did not answer within "
                        f"{self.timeout} s while {what}. The env is closed."
                    )
                if conn not in ready and not conn.poll():
                    self._fail(index, what)
            return conn.recv_bytes()
        except (EOFError, ConnectionError):
            self._fail(index, what)
            raise  # unreachable: _fail raises

    def _fail(self, index: int, what: str) -> None:
        process = self.processes[index]
        process.join(timeout=1.0)
        code = process.exitcode
        self.close()
        raise RuntimeError(
            f"ParallelEnv: worker {index} (pid {process.pid}) died with exit code {code} while "
            f"{what}. The env is closed; build a new one."
        )

    def close(self) -> None:
        """Asks each worker to stop, joins it, and terminates (then kills) any that lingers."""
        if self.closed:
            return
        self.closed = True
        for process, conn in zip(self.processes, self.conns):
            if process.is_alive():
                with contextlib.suppress(BrokenPipeError, ConnectionError, OSError):
                    conn.send_bytes(_worker.CLOSE)
        deadline = time.monotonic() + self.grace
        for process in self.processes:
            process.join(timeout=max(deadline - time.monotonic(), 0.0))
            if process.is_alive():
                process.terminate()
                process.join(timeout=1.0)
            if process.is_alive():
                process.kill()
                process.join()
        for conn in self.conns:
            conn.close()


__all__ = ["REMOTE_ERRORS", "WorkerPool", "default_start_method"]
