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
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_collectors.weight_sync import SharedMemTransport, WeightSyncScheme
from rl_collectors.weight_sync.shared_mem import ParentGone


def _same_keys(a: TensorDictBase, b: TensorDictBase) -> bool:
    return set(a.keys(True, True)) == set(b.keys(True, True))


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def worker_main(
    index: int,
    conn: Connection,
    create_env_fn: Any,
    policy: Any,
    weights: SharedMemTransport | None,
    seed: int,
    kwargs: dict[str, Any],
    schemes: dict[str, WeightSyncScheme] | None = None,
) -> None:
    """Runs one collector and answers the parent's commands until ``"close"``.

    ``weights`` is the default shared copy of the policy's weights; ``schemes`` (the
    collector's ``weight_sync_schemes``, in their sender state) replace it: the worker
    initialises each on its receiving side and receives before every batch."""
    from rl_collectors.sync import SyncDataCollector

    # SIGTERM (the parent's terminate()) unwinds through the finally below: the env is closed.
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    parent = multiprocessing.parent_process()
    watch = [conn] if parent is None else [conn, parent.sentinel]
    collector = None
    try:
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        if weights is not None or schemes:
            # Under spawn the policy arrives with its tensors in the parent's shared memory:
            # a private copy keeps the parent's updates out of a batch in progress.
            policy = copy.deepcopy(policy)
        collector = SyncDataCollector(create_env_fn, policy, return_same_td=True, **kwargs)
        seen = 0
        if weights is not None:
            seen = weights.pull(collector.policy, -1, parent)
        for model_id, scheme in (schemes or {}).items():
            scheme.init_on_receiver(model_id=model_id, context=collector, worker_idx=index)
        shared: TensorDictBase | None = None
        while True:
            if conn not in wait(watch):
                return  # the parent is gone: no orphan
            command, argument = conn.recv()
            if command == "collect":
                if weights is not None:
                    seen = weights.pull(collector.policy, seen, parent)
                for scheme in (schemes or {}).values():
                    scheme.receive(timeout=0.0)
                if schemes and "policy" in schemes:
                    seen = schemes["policy"].version
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
