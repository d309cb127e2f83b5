"""The worker process of ParallelEnv: builds one env and serves the parent's commands.

Protocol (one message each way per command but ``CLOSE``, over a ``multiprocessing`` pipe; the bytes are in
:mod:`rl_envs.batched._wire`): the first byte names the command, the rest is a pickled
argument where there is one. The handlers are those of the worker side of the transport the
parent chose (:mod:`rl_envs.batched._worker_transport`); this module runs the command loop.

- ``STEP``: the inputs (actions, states) are in the shared input buffer, with one byte per
  entry in the message saying whether the parent wrote it (or the inputs are pickled in the
  message); the worker steps and writes the ``"next"`` entries to the shared step buffer.
- ``STEP_AND_RESET``: as ``STEP``, then resets the sub-envs that are done and writes the next
  root (observations, done flags) to the shared reset buffer; replies ``RESET_DONE`` when a
  sub-env was reset. Through the pipes, the next root is sent only then.
- ``RESET``: argument ``(partial, masks, kwargs)``; with ``partial``, the ``"_reset"`` masks
  are ``masks`` or, when that is ``None``, in the shared mask buffer. Writes the reset output
  to the shared reset buffer.
- ``ROLLOUT``: argument ``(start, steps)``; a rollout with random actions of ``steps`` steps
  from the root ``start`` (finished sub-envs reset), replied pickled. The worker's root is then
  unknown: the parent sends one (``ROOT``) before the next step or partial reset.
- ``ROOT``: argument the root TensorDict the next step starts from.
- ``SEED``: argument ``(seed, static_seed)``; seeds the env and this process's torch RNG (the
  random actions of ``ROLLOUT`` come from it); replies with the next seed.
- ``CLOSE``: closes the env and ends the process, without a reply (so does ``SIGTERM``).

Replies: ``OK`` (plus a pickled payload where there is one) or ``ERROR`` with a pickled
``(exception type name, message, traceback text)``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import select
import signal
import time
import traceback
from typing import Any

import torch

from rl_envs.batched._meta import EnvMetadata, Path
from rl_envs.batched._shared import SharedBuffers
from rl_envs.batched._wire import (
    CLOSE,
    ERROR,
    OK,
    RESET,
    ROLLOUT,
    ROOT,
    SEED,
    STEP,
    STEP_AND_RESET,
    read_frame,
)
from rl_envs.batched._worker_transport import worker_env

# After a reply, a worker polls its pipe without sleeping for up to this long (yielding its
# CPU to any other runnable process each time) before it blocks: the next command of a
# rollout usually comes sooner, and a command to a worker that is not asleep needs no wake-up.
WORKER_SPIN_SECONDS = 300e-6


def worker_main(
    index: int,
    conn: multiprocessing.connection.Connection,
    create_env_fn: Any,
    shared: SharedBuffers | None,
    paths: dict[str, list[Path]],
    reference: EnvMetadata,
    num_sub_threads: int,
    torch_seed: int,
) -> None:
    """Entry point of a worker process."""
    torch.set_num_threads(num_sub_threads)
    # Forked workers share the parent's RNG state: each gets its own stream.
    torch.manual_seed(torch_seed)
    _batch_scheduling()
    wait = _waiter(conn, multiprocessing.parent_process())
    if os.name == "posix":
        fd = conn.fileno()

        def receive() -> bytes:
            return read_frame(fd)
    else:
        receive = conn.recv_bytes
    # SIGTERM (the pool's terminate() when a worker died or hung) unwinds through the
    # finally below: the env is closed, so processes it started end with it.
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    env = None
    try:
        try:
            env = create_env_fn()
            difference = reference.difference(EnvMetadata.from_env(env))
            if difference is not None:
                raise ValueError(
                    f"ParallelEnv: the env of worker {index} ({type(env).__name__}) has "
                    f"{difference}, unlike the env the specs come from ({reference.env_type}). "
                    f"All workers' envs must have the same specs, batch size and device."
                )
            worker = worker_env(index, env, shared, paths)
        except Exception as err:
            conn.send_bytes(ERROR + pickle.dumps(_describe(err)))
            return
        conn.send_bytes(OK)
        _serve(worker, wait, receive, conn)
    finally:
        # A SIGTERM now does not cut the env's close short (the pool kills a worker that lingers).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if env is not None:
            env.close()
        conn.close()


def _serve(worker: Any, wait: Any, receive: Any, conn: Any) -> None:
    """Answers the parent's commands until ``CLOSE``, a closed pipe or the parent's end."""
    handlers = {
        STEP: worker.step,
        STEP_AND_RESET: worker.step_and_reset,
        RESET: worker.reset,
        ROLLOUT: worker.rollout,
        ROOT: worker.set_root,
        SEED: worker.seed,
    }
    while True:
        if not wait():
            return  # the parent process is gone
        try:
            message = receive()
        except (EOFError, OSError):
            return
        command, payload = message[:1], message[1:]
        if command == CLOSE:
            return
        try:
            reply = OK + handlers[command](payload)
        except Exception as err:
            reply = ERROR + pickle.dumps(_describe(err))
        conn.send_bytes(reply)


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _batch_scheduling() -> None:
    """Linux: schedule this worker as a batch task, so that waking it does not preempt the parent.

    The parent wakes the workers one after the other; a woken worker preempting the parent
    would delay the wake-up of the next worker until it yields the CPU.
    """
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is None or not hasattr(os, "sched_setscheduler"):
        return
    with contextlib.suppress(OSError):
        os.sched_setscheduler(0, policy, os.sched_param(0))


def _waiter(conn: Any, parent: Any) -> Any:
    """A function blocking until a command arrives (True) or the parent process ends (False)."""
    if parent is None:
        return lambda: True
    if hasattr(select, "poll"):
        # One poll object for the worker's life: ~1 µs per wait instead of ~9 µs.
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN)
        poller.register(parent.sentinel, select.POLLIN)
        fd = conn.fileno()

        def wait_poll() -> bool:
            events = poller.poll(0)
            until = time.perf_counter() + WORKER_SPIN_SECONDS
            while not events and time.perf_counter() < until:
                os.sched_yield()
                events = poller.poll(0)
            if not events:
                events = poller.poll()
            return any(ready_fd == fd for ready_fd, _ in events)

        return wait_poll
    watch = [conn, parent.sentinel]
    return lambda: conn in multiprocessing.connection.wait(watch)


def _describe(err: BaseException) -> tuple[str, str, str]:
    return type(err).__name__, str(err), traceback.format_exc()


__all__ = ["worker_main"]
