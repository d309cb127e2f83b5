"""Storages: where a replay buffer keeps its items."""

from rl_buffers.storages.checkpointers import (
    FlatStorageCheckpointer,
    H5StorageCheckpointer,
    NestedStorageCheckpointer,
    StorageCheckpointerBase,
    TensorStorageCheckpointer,
)
from rl_buffers.storages.checkpointers_list import (
    CompressedListStorageCheckpointer,
    ListStorageCheckpointer,
    StorageEnsembleCheckpointer,
)
from rl_buffers.storages.compressed_list import CompressedListStorage
from rl_buffers.storages.ensemble import StorageEnsemble
from rl_buffers.storages.lazy_memmap import LazyMemmapStorage
from rl_buffers.storages.lazy_stack import LazyStackStorage
from rl_buffers.storages.lazy_tensor import LazyTensorStorage
from rl_buffers.storages.list_storage import ListStorage
from rl_buffers.storages.storage import Storage
from rl_buffers.storages.tensor_storage import TensorStorage

__all__ = [
    "FlatStorageCheckpointer",
    "H5StorageCheckpointer",
    "NestedStorageCheckpointer",
    "StorageCheckpointerBase",
    "TensorStorageCheckpointer",
    "ListStorageCheckpointer",
    "CompressedListStorageCheckpointer",
    "StorageEnsembleCheckpointer",
    "StorageEnsemble",
    "CompressedListStorage",
    "LazyMemmapStorage",
    "LazyStackStorage",
    "LazyTensorStorage",
    "ListStorage",
    "Storage",
    "TensorStorage",
]
