"""The worker process of the multi-process collectors: one ``SyncDataCollector`` per worker.

Protocol (one ``Connection`` per worker, the parent speaks first): the parent sends
``(command, argument)`` and the worker answers ``(status, payload)``. ``"collect"`` answers
``("batch", (batch or None, version))``: the batch lives in shared memory and is sent once
(then ``None``: the worker rewrote it in place); the parent copies it out before it asks for
the next one. Any exception, including one while the worker starts (building its env or its
collector), is answered ``("error", traceback text)`` and ends the worker.

A worker ends when the parent says ``"close"``, when its pipe closes, when the parent process
ends (it watches the parent's sentinel) or on ``SIGTERM``; each way closes the env it built
first, so processes the env started (a ``ParallelEnv``'s workers) end with it.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing
import signal
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

# Seconds between two looks at the version while the parent is writing the weights.
WRITE_WAIT_S = 0.001


class ParentGone(Exception):
    """The parent process ended: the worker stops quietly."""


class SharedWeights:
    """A policy's parameters and buffers in shared memory, published without a lock.

    A sequence counter guards the copy (a seqlock): ``publish`` (the parent) makes the counter
    odd, writes the weights and makes it even again; ``pull`` (a worker) copies them only
    while the counter is even and the same before and after its copy, and copies again
    otherwise. Nobody waits on a lock, so a worker killed in the middle of its copy leaves
    nothing held: the parent's next ``publish`` goes through. The published version is the
    counter halved.
    """

    def __init__(self, policy: torch.nn.Module, context: Any) -> None:
        self.weights = TensorDict.from_module(policy).data.clone().share_memory_()
        self.counter = context.Value("q", 0, lock=False)

    @property
    def version(self) -> int:
        """How many times the weights were published."""
        return self.counter.value // 2

    def publish(self, weights: torch.nn.Module | TensorDictBase) -> int:
        """Writes a policy's weights (a module, or a TensorDict of all or some of them;
        parent side); returns the new version."""
        if isinstance(weights, torch.nn.Module):
            weights = TensorDict.from_module(weights).data
        start = self.counter.value
        self.counter.value = start + 1  # odd: a copy is being written
        try:
            self.weights.update_(weights)
        finally:
            self.counter.value = start + 2
        return (start + 2) // 2

    def pull(self, policy: torch.nn.Module, seen: int, parent: Any = None) -> int:
        """Copies the published weights into ``policy`` unless version ``seen`` is the
        latest (worker side); returns the version it holds. ``parent`` (a process object)
        ends the wait with ``ParentGone`` if the parent dies while it writes."""
        while True:
            start = self.counter.value
            if start % 2:
                if parent is not None and not parent.is_alive():
                    raise ParentGone
                time.sleep(WRITE_WAIT_S)
                continue
            if start // 2 == seen:
                return seen
            with torch.no_grad():
                TensorDict.from_module(policy).update_(self.weights)
            if self.counter.value == start:
                return start // 2


def _same_keys(a: TensorDictBase, b: TensorDictBase) -> bool:
    return set(a.keys(True, True)) == set(b.keys(True, True))


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def worker_main(
    index: int,
    conn: Connection,
    create_env_fn: Any,
    policy: Any,
    weights: SharedWeights | None,
    seed: int,
    kwargs: dict[str, Any],
) -> None:
    """Runs one collector and answers the parent's commands until ``"close"``."""
    from rl_collectors.sync import SyncDataCollector

    # SIGTERM (the parent's terminate()) unwinds through the finally below: the env is closed.
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    parent = multiprocessing.parent_process()
    watch = [conn] if parent is None else [conn, parent.sentinel]
    collector = None
    try:
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        if weights is not None:
            # Under spawn the policy arrives with its tensors in the parent's shared memory:
            # a private copy keeps the parent's updates out of a batch in progress.
            policy = copy.deepcopy(policy)
        collector = SyncDataCollector(create_env_fn, policy, return_same_td=True, **kwargs)
        seen = 0
        if weights is not None:
            seen = weights.pull(collector.policy, -1, parent)
        shared: TensorDictBase | None = None
        while True:
            if conn not in wait(watch):
                return  # the parent is gone: no orphan
            command, argument = conn.recv()
            if command == "collect":
                if weights is not None:
                    seen = weights.pull(collector.policy, seen, parent)
                batch = collector.rollout()
                if shared is not None and _same_keys(shared, batch):
                    shared.update_(batch)
                    conn.send(("batch", (None, seen)))
                else:
                    shared = batch.clone().share_memory_()
                    conn.send(("batch", (shared, seen)))
            elif command == "seed":
                torch.manual_seed(argument)
                conn.send(("seed", collector.set_seed(argument)))
            elif command == "profile":
                collector._apply_profile(argument, index)
                conn.send(("profile", None))
            elif command == "reset":
                collector.reset()
                conn.send(("reset", None))
            elif command == "state_dict":
                conn.send(("state_dict", collector.state_dict()))
            elif command == "load_state_dict":
                collector.load_state_dict(argument)
                conn.send(("load_state_dict", None))
            elif command == "close":
                collector.shutdown()
                conn.send(("close", None))
                return
            else:
                raise ValueError(f"worker {index}: unknown command {command!r}")
    except (EOFError, BrokenPipeError, ConnectionResetError, ParentGone, SystemExit):
        return  # the parent closed its end, is gone, or terminates this worker
    except BaseException:
        with contextlib.suppress(OSError, ValueError):
            conn.send(("error", traceback.format_exc()))
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the cleanup
        if collector is not None:
            with contextlib.suppress(Exception):
                collector.shutdown()
