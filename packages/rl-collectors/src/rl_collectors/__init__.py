"""Data collectors that run rl-core policies in rl-core environments.

``SyncDataCollector`` (alias ``Collector``) collects in this process;
``MultiSyncDataCollector``, ``MultiaSyncDataCollector`` and ``aSyncDataCollector`` run
collectors in worker processes; ``RayCollector`` runs them as Ray actors (extra
``rl-collectors[ray]``, imported only when one is built).
"""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-collectors")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

from rl_collectors.async_collector import aSyncDataCollector
from rl_collectors.distributed import RayCollector
from rl_collectors.multi_async import MultiaSyncDataCollector
from rl_collectors.multi_sync import MultiSyncDataCollector
from rl_collectors.sync import Collector, SyncDataCollector
from rl_collectors.utils import split_trajectories

__version__ = _version("rl-collectors")

__all__ = [
    "__version__",
    "Collector",
    "SyncDataCollector",
    "MultiSyncDataCollector",
    "MultiaSyncDataCollector",
    "aSyncDataCollector",
    "RayCollector",
    "split_trajectories",
]
