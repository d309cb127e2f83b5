"""``submitit_delayed_launcher``: the trainer's job first, then the collector nodes' jobs, for
clusters where a job cannot submit jobs itself."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rl_collectors.distributed._launch import import_submitit
from rl_collectors.distributed._node import node_main
from rl_collectors.distributed.default_configs import DEFAULT_SLURM_CONF, DEFAULT_SLURM_CONF_MAIN
from rl_collectors.distributed.generic import RENDEZVOUS_ENV

# Seconds between two looks at the rendezvous file.
POLL_S = 0.1


def _run_main(main_func: Callable[[], Any], rendezvous: str) -> Any:
    """The trainer's job: ``main_func`` with the rendezvous file named in the environment."""
    os.environ[RENDEZVOUS_ENV] = rendezvous
    return main_func()


class submitit_delayed_launcher:
    """Submits the trainer's job, then one job per collector node once the trainer's
    ``DistributedCollector(..., launcher="submitit_delayed")`` is listening.

    For clusters where a running job cannot submit others: run the decorated function from
    the login node. The trainer's collector writes its address to a file in ``folder`` (a
    shared filesystem, as SLURM clusters have); this launcher reads it and submits the nodes,
    which take their configuration (env factories, policy) from the trainer.

    Args:
        num_jobs: how many collector nodes (the length of the collector's ``create_env_fn``).

    Keyword Args:
        framework: ``"distributed"`` (a ``DistributedCollector``).
        backend: the ``torch.distributed`` backend; must be the collector's.
        tcpport: unused (the collector picks its port and writes it); kept for TorchRL's
            signature.
        submitit_main_conf: the trainer job's submitit parameters.
        submitit_collection_conf: each node job's submitit parameters.
        folder: submitit's log folder (and the rendezvous file's); a temporary folder by
            default.
        cluster: submitit's cluster (``"local"`` runs every job on this machine; ``None``
            picks SLURM when present).
        timeout: seconds to wait for the trainer to start listening.

    Returns:
        Calling the decorated function returns the trainer's submitit job (``.result()``
        waits for the function's result).

    Raises:
        ValueError: ``num_jobs`` < 1 or an unsupported ``framework``.
        RuntimeError: the trainer's job ended or timed out before listening.

    Examples:
        >>> from rl_collectors.distributed import submitit_delayed_launcher
        >>> launcher = submitit_delayed_launcher(num_jobs=2, cluster="local")
        >>> launcher.num_jobs, launcher.framework
        (2, 'distributed')
    """

    def __init__(
        self,
        num_jobs: int,
        framework: str = "distributed",
        backend: str = "gloo",
        tcpport: int | None = None,
        submitit_main_conf: dict[str, Any] = DEFAULT_SLURM_CONF_MAIN,
        submitit_collection_conf: dict[str, Any] = DEFAULT_SLURM_CONF,
        *,
        folder: str | os.PathLike | None = None,
        cluster: str | None = None,
        timeout: float = 600.0,
    ) -> None:
        if not isinstance(num_jobs, int) or isinstance(num_jobs, bool) or num_jobs < 1:
            raise ValueError(
                f"submitit_delayed_launcher: expected num_jobs as an int >= 1, got {num_jobs!r}."
            )
        if framework != "distributed":
            raise ValueError(
                f"submitit_delayed_launcher: expected framework 'distributed', got "
                f"{framework!r} (RPCCollector is not part of this stack; use "
                f"DistributedCollector)."
            )
        self.num_jobs = num_jobs
        self.framework = framework
        self.backend = backend
        self.tcpport = tcpport
        self.submitit_main_conf = dict(submitit_main_conf)
        self.submitit_collection_conf = dict(submitit_collection_conf)
        self.folder = folder
        self.cluster = cluster
        self.timeout = timeout
        self.node_jobs: list[Any] = []

    def __call__(self, main_func: Callable[[], Any]) -> Callable[[], Any]:
        def exec_fun() -> Any:
            submitit = import_submitit("submitit_delayed_launcher")
            folder = Path(self.folder or tempfile.mkdtemp(prefix="rl_collectors_submitit_"))
            folder.mkdir(parents=True, exist_ok=True)
            rendezvous = folder / f"rendezvous-{os.getpid()}-{time.monotonic_ns()}"
            executor = submitit.AutoExecutor(folder=folder, cluster=self.cluster)
            executor.update_parameters(**self.submitit_main_conf)
            main_job = executor.submit(_run_main, main_func, str(rendezvous))
            host, port, world, backend, timeout = self._wait(main_job, rendezvous)
            if world != self.num_jobs + 1:
                main_job.cancel()
                raise RuntimeError(
                    f"submitit_delayed_launcher: the trainer's collector expects "
                    f"{world - 1} nodes, the launcher was given num_jobs={self.num_jobs}."
                )
            executor = submitit.AutoExecutor(folder=folder, cluster=self.cluster)
            executor.update_parameters(**self.submitit_collection_conf)
            self.node_jobs = [
                executor.submit(node_main, rank, world, host, port, backend, timeout)
                for rank in range(1, world)
            ]
            return main_job

        return exec_fun

    def _wait(self, main_job: Any, rendezvous: Path) -> tuple[str, int, int, str, float]:
        deadline = time.monotonic() + self.timeout
        while not rendezvous.exists():
            if main_job.done():
                raise RuntimeError(
                    f"submitit_delayed_launcher: the trainer's job {main_job.job_id} ended "
                    f"before its DistributedCollector listened (state {main_job.state}); its "
                    f"error: {main_job.exception()!r}."
                )
            if time.monotonic() > deadline:
                main_job.cancel()
                raise RuntimeError(
                    f"submitit_delayed_launcher: the trainer's job {main_job.job_id} did not "
                    f"build a DistributedCollector(launcher='submitit_delayed') within "
                    f"{self.timeout} s."
                )
            time.sleep(POLL_S)
        host, port, world, backend, timeout = rendezvous.read_text().split()
        if backend != self.backend:
            main_job.cancel()
            raise RuntimeError(
                f"submitit_delayed_launcher: backend={self.backend!r} but the collector uses "
                f"{backend!r}; pass the same backend to both."
            )
        return host, int(port), int(world), backend, float(timeout)


__all__ = ["submitit_delayed_launcher"]
