"""Weight synchronisation schemes (TorchRL 0.14's ``torchrl.weight_update``).

A ``WeightSyncScheme`` moves ONE model's weights from a sender to its receivers over
transports: ``SharedMemWeightSyncScheme`` (one shared-memory copy on this machine),
``MultiProcessWeightSyncScheme`` (a pipe per worker process), ``NoWeightSyncScheme``
(nothing), ``DistributedWeightSyncScheme`` (``torch.distributed``), ``RPCWeightSyncScheme``
(``torch.distributed.rpc``), ``RayWeightSyncScheme`` (Ray's object store) and
``RayModuleTransformScheme`` (into a ``RayModuleTransform``'s actor). The collectors
take them as ``weight_sync_schemes={"policy": scheme}``.
"""

from rl_collectors.weight_sync.distributed import DistributedTransport, DistributedWeightSyncScheme
from rl_collectors.weight_sync.mp import MPTransport, MultiProcessWeightSyncScheme
from rl_collectors.weight_sync.no_update import NoWeightSyncScheme
from rl_collectors.weight_sync.ray import RayTransport, RayWeightSyncScheme
from rl_collectors.weight_sync.ray_module_transform import RayModuleTransformScheme
from rl_collectors.weight_sync.rpc import RPCTransport, RPCWeightSyncScheme
from rl_collectors.weight_sync.scheme import (
    InitialSyncTransport,
    TransportBackend,
    WeightSyncBackend,
    WeightSyncScheme,
)
from rl_collectors.weight_sync.shared_mem import SharedMemTransport, SharedMemWeightSyncScheme
from rl_collectors.weight_sync.strategy import WeightStrategy

__all__ = [
    "TransportBackend",
    "InitialSyncTransport",
    "WeightSyncBackend",
    "WeightStrategy",
    "WeightSyncScheme",
    "MPTransport",
    "SharedMemTransport",
    "MultiProcessWeightSyncScheme",
    "SharedMemWeightSyncScheme",
    "NoWeightSyncScheme",
    "DistributedTransport",
    "DistributedWeightSyncScheme",
    "RPCTransport",
    "RPCWeightSyncScheme",
    "RayTransport",
    "RayModuleTransformScheme",
    "RayWeightSyncScheme",
]
