"""Data collectors that run rl-core policies in rl-core environments.

``Collector`` collects in this process; ``MultiSyncCollector``, ``MultiAsyncCollector`` and
``AsyncCollector`` run collectors in worker processes; ``RayCollector`` runs them as Ray
actors (extra ``rl-collectors[ray]``, imported only when one is built). All derive from
``BaseCollector``. These are TorchRL 0.14's names; its older names are the same classes
(``SyncDataCollector``, ``MultiSyncDataCollector``, ``MultiaSyncDataCollector``,
``aSyncDataCollector``, ``DataCollectorBase``), and the classes keep the older names as
their ``__name__`` (changing that is a breaking change left to a release).
"""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-collectors")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

from rl_collectors.async_batched import AsyncBatchedCollector
from rl_collectors.async_collector import AsyncCollector, aSyncDataCollector
from rl_collectors.base import BaseCollector, DataCollectorBase
from rl_collectors.distributed import RayCollector
from rl_collectors.evaluator import Evaluator
from rl_collectors.inference_server import (
    InferenceClient,
    InferenceServer,
    InferenceTransport,
    ThreadingTransport,
)
from rl_collectors.multi_async import MultiAsyncCollector, MultiaSyncDataCollector
from rl_collectors.multi_collector import MultiCollector
from rl_collectors.multi_sync import MultiSyncCollector, MultiSyncDataCollector
from rl_collectors.postprocs import MultiStep
from rl_collectors.profiling import ProfileConfig
from rl_collectors.sync import Collector, SyncDataCollector
from rl_collectors.utils import split_trajectories
from rl_collectors.weight_update import (
    MultiProcessedWeightUpdater,
    RayWeightUpdater,
    RemoteModuleWeightUpdater,
    VanillaWeightUpdater,
    WeightUpdaterBase,
)

__version__ = _version("rl-collectors")

__all__ = [
    "__version__",
    "BaseCollector",
    "Collector",
    "MultiSyncCollector",
    "MultiAsyncCollector",
    "MultiCollector",
    "AsyncCollector",
    "DataCollectorBase",
    "SyncDataCollector",
    "MultiSyncDataCollector",
    "MultiaSyncDataCollector",
    "aSyncDataCollector",
    "RayCollector",
    "MultiStep",
    "split_trajectories",
    "WeightUpdaterBase",
    "VanillaWeightUpdater",
    "MultiProcessedWeightUpdater",
    "RayWeightUpdater",
    "RemoteModuleWeightUpdater",
    "Evaluator",
    "InferenceServer",
    "InferenceClient",
    "InferenceTransport",
    "ThreadingTransport",
    "ProfileConfig",
    "AsyncBatchedCollector",
]
