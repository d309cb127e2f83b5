"""Distributed collectors: ``RayCollector`` (extra ``rl-collectors[ray]``), and collector nodes
on ``torch.distributed`` (``DistributedCollector``, ``DistributedSyncCollector``) or driven over
``torch.distributed.rpc`` (``RPCCollector``), started as local processes or submitit jobs
(extra ``rl-collectors[submitit]``)."""

from rl_collectors.distributed.default_configs import DEFAULT_SLURM_CONF, DEFAULT_SLURM_CONF_MAIN
from rl_collectors.distributed.generic import DistributedCollector, DistributedWeightUpdater
from rl_collectors.distributed.launcher import submitit_delayed_launcher
from rl_collectors.distributed.ray_collector import RayCollector
from rl_collectors.distributed.ray_eval_worker import RayEvalWorker
from rl_collectors.distributed.rpc import RPCCollector, RPCWeightUpdater
from rl_collectors.distributed.sync import DistributedSyncCollector

__all__ = [
    "RayCollector",
    "RayEvalWorker",
    "DistributedCollector",
    "DistributedSyncCollector",
    "DistributedWeightUpdater",
    "RPCCollector",
    "RPCWeightUpdater",
    "DEFAULT_SLURM_CONF",
    "DEFAULT_SLURM_CONF_MAIN",
    "submitit_delayed_launcher",
]
