"""Replay buffers that store and sample rl-core TensorDicts.

A buffer combines a storage (:class:`ListStorage`, :class:`TensorStorage`,
:class:`LazyTensorStorage`, :class:`LazyMemmapStorage`), a sampler (:class:`RandomSampler`,
:class:`SamplerWithoutReplacement`, :class:`PrioritizedSampler`, :class:`SliceSampler`,
:class:`SliceSamplerWithoutReplacement`, :class:`PrioritizedSliceSampler`) and a writer
(:class:`RoundRobinWriter`, :class:`TensorDictRoundRobinWriter`,
:class:`TensorDictMaxValueWriter`). Offline datasets live in :mod:`rl_buffers.datasets`.
"""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-buffers")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

from rl_buffers.datasets import (
    Flat2TED,
    H5Combine,
    H5Split,
    Nested2TED,
    TED2Flat,
    TED2Nested,
)
from rl_buffers.replay_buffers import (
    HERReplayBuffer,
    HindsightStrategy,
    OfflineToOnlineReplayBuffer,
    PrioritizedReplayBuffer,
    RayReplayBuffer,
    RemoteTensorDictReplayBuffer,
    ReplayBuffer,
    ReplayBufferEnsemble,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
    prefill_replay_buffer,
)
from rl_buffers.samplers import (
    ConsumingSampler,
    PrioritizedSampler,
    PrioritizedSliceSampler,
    RandomSampler,
    Sampler,
    SamplerEnsemble,
    SamplerWithoutReplacement,
    SliceSampler,
    SliceSamplerWithoutReplacement,
    StalenessAwareSampler,
    StreamingSliceSampler,
)
from rl_buffers.storages import (
    CompressedListStorage,
    CompressedListStorageCheckpointer,
    FlatStorageCheckpointer,
    H5StorageCheckpointer,
    LazyMemmapStorage,
    LazyStackStorage,
    LazyTensorStorage,
    ListStorage,
    ListStorageCheckpointer,
    NestedStorageCheckpointer,
    Storage,
    StorageCheckpointerBase,
    StorageEnsemble,
    StorageEnsembleCheckpointer,
    TensorStorage,
    TensorStorageCheckpointer,
)
from rl_buffers.writers import (
    ImmutableDatasetWriter,
    RoundRobinWriter,
    TensorDictMaxValueWriter,
    TensorDictRoundRobinWriter,
    Writer,
    WriterEnsemble,
)

__version__ = _version("rl-buffers")

__all__ = [
    "__version__",
    # buffers
    "ReplayBuffer",
    "TensorDictReplayBuffer",
    "PrioritizedReplayBuffer",
    "TensorDictPrioritizedReplayBuffer",
    "RayReplayBuffer",
    "RemoteTensorDictReplayBuffer",
    "ReplayBufferEnsemble",
    "HERReplayBuffer",
    "HindsightStrategy",
    "prefill_replay_buffer",
    "OfflineToOnlineReplayBuffer",
    # storages
    "Storage",
    "ListStorage",
    "CompressedListStorage",
    "LazyStackStorage",
    "TensorStorage",
    "LazyTensorStorage",
    "LazyMemmapStorage",
    "StorageEnsemble",
    "StorageCheckpointerBase",
    "TensorStorageCheckpointer",
    "ListStorageCheckpointer",
    "CompressedListStorageCheckpointer",
    "StorageEnsembleCheckpointer",
    "FlatStorageCheckpointer",
    "H5StorageCheckpointer",
    "NestedStorageCheckpointer",
    # samplers
    "Sampler",
    "RandomSampler",
    "SamplerWithoutReplacement",
    "PrioritizedSampler",
    "SliceSampler",
    "SliceSamplerWithoutReplacement",
    "PrioritizedSliceSampler",
    "SamplerEnsemble",
    "StalenessAwareSampler",
    "ConsumingSampler",
    "StreamingSliceSampler",
    # writers
    "Writer",
    "RoundRobinWriter",
    "TensorDictRoundRobinWriter",
    "TensorDictMaxValueWriter",
    "WriterEnsemble",
    "ImmutableDatasetWriter",
    # dataset formats
    "TED2Flat",
    "Flat2TED",
    "TED2Nested",
    "Nested2TED",
    "H5Split",
    "H5Combine",
]
