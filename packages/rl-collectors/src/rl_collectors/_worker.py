"""The worker process of the multi-process collectors: one ``SyncDataCollector`` per worker.

Protocol (one ``Connection`` per worker, the parent speaks first): the parent sends
``(command, argument)`` and the worker answers ``(status, payload)``. ``"collect"`` answers
``("batch", (batch or None, version))``: the batch lives in shared memory and is sent once
(then ``None``: the worker rewrote it in place); the parent copies it out before it asks for
the next one. Any exception is answered ``("error", traceback text)`` and ends the worker.
"""

from __future__ import annotations

import contextlib
import copy
import os
import traceback
from multiprocessing.connection import Connection
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

# How often (seconds) a worker waiting for a command checks that its parent is alive.
PARENT_CHECK_S = 0.5


class SharedWeights:
    """A policy's parameters and buffers in shared memory, with a version counter.

    The parent writes with ``publish`` (under the lock) and bumps the version; each worker
    copies them into its own policy with ``pull`` when the version moved.
    """

    def __init__(self, policy: torch.nn.Module, context: Any) -> None:
        self.weights = TensorDict.from_module(policy).data.clone().share_memory_()
        self.version = context.Value("q", 0, lock=False)
        self.lock = context.Lock()

    def publish(self, policy: torch.nn.Module) -> int:
        with self.lock:
            self.weights.update_(TensorDict.from_module(policy).data)
            self.version.value += 1
            return self.version.value

    def pull(self, policy: torch.nn.Module, seen: int) -> int:
        if self.version.value == seen:
            return seen
        with self.lock, torch.no_grad():
            TensorDict.from_module(policy).update_(self.weights)
            return self.version.value


def _same_keys(a: TensorDictBase, b: TensorDictBase) -> bool:
    return set(a.keys(True, True)) == set(b.keys(True, True))


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

    parent = os.getppid()
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
            seen = weights.pull(collector.policy, -1)
        shared: TensorDictBase | None = None
        while True:
            while not conn.poll(PARENT_CHECK_S):
                if os.getppid() != parent:
                    return  # the parent is gone: no orphan
            command, argument = conn.recv()
            if command == "collect":
                if weights is not None:
                    seen = weights.pull(collector.policy, seen)
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
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the parent closed its end
    except BaseException:
        with contextlib.suppress(OSError, ValueError):
            conn.send(("error", traceback.format_exc()))
