"""Starting collector nodes: local processes (``"mp"``) or submitit jobs (``"submitit"``,
SLURM in production, submitit's local executor on one machine). Each node is a handle that
says whether it is gone and stops it."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
from collections.abc import Callable
from typing import Any

from rl_collectors.distributed._node import node_main

# Seconds a node gets to exit after CLOSE before it is killed.
CLOSE_TIMEOUT_S = 5.0


def import_submitit(where: str) -> Any:
    try:
        import submitit
    except ImportError as err:
        raise ImportError(
            f'{where} needs submitit for launcher="submitit": pip install "rl-collectors[submitit]"'
        ) from err
    return submitit


def _group_leader_main(target: Callable[..., None], *args: Any) -> None:
    """Runs ``target(*args)`` as the leader of a process group of its own: the processes the
    node starts (a multi-process collector's env workers) join it, and stopping the node
    stops them with it."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    target(*args)


class ProcessNode:
    """A node started as a local process, leading a process group of its own (its env
    workers are in it): ``stop`` ends the node and every process it started, even when the
    node was killed and its workers are orphans in the middle of a batch."""

    def __init__(self, context: Any, args: tuple, target: Callable[..., None] = node_main) -> None:
        self.process = context.Process(
            target=_group_leader_main, args=(target, *args), daemon=False
        )
        self.process.start()
        # Also set from here, so that no worker the node starts can precede its group.
        with contextlib.suppress(OSError):
            os.setpgid(self.process.pid, self.process.pid)

    def gone(self) -> str | None:
        code = self.process.exitcode
        return None if code is None else f"pid {self.process.pid}, exit code {code}"

    def stop(self, grace: float) -> None:
        self.process.join(grace)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        # What the node started and did not end (it was killed, or its workers were busy
        # with a batch): the group outlives its leader while one of them runs.
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)


class SubmititNode:
    """A node started as a submitit job."""

    def __init__(self, executor: Any, args: tuple, target: Callable[..., None] = node_main) -> None:
        self.job = executor.submit(target, *args)

    def gone(self) -> str | None:
        if not self.job.done():
            return None
        return f"submitit job {self.job.job_id}, state {self.job.state}"

    def stop(self, grace: float) -> None:
        import time

        deadline = time.monotonic() + grace
        while not self.job.done() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not self.job.done():
            with contextlib.suppress(Exception):
                self.job.cancel()


def start_nodes(
    where: str,
    launcher: str,
    args: list[tuple],
    *,
    start_method: str | None,
    slurm_kwargs: dict[str, Any],
    folder: str | os.PathLike | None,
    cluster: str | None,
    target: Callable[..., None] = node_main,
) -> list[Any]:
    """One handle per node: ``args[i]`` are ``target``'s arguments for node ``i`` (by
    default ``node_main``'s)."""
    if launcher == "mp":
        # Garbage of earlier collectors (process groups with threads) is destroyed here, where
        # its threads live, before a forked node inherits it (the node freezes what it got).
        gc.collect()
        context = multiprocessing.get_context(start_method)
        return [ProcessNode(context, a, target) for a in args]
    submitit = import_submitit(where)
    executor = submitit.AutoExecutor(folder=folder or "submitit_logs", cluster=cluster)
    executor.update_parameters(**slurm_kwargs)
    return [SubmititNode(executor, a, target) for a in args]
