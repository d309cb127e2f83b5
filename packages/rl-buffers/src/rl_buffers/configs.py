"""Hydra configs of rl-buffers' storages, samplers, writers and buffers (needs
``pip install "rl-buffers[hydra]"``).

Typed dataclasses with a ``_target_``; a buffer config nests its storage, sampler and writer
configs, so ``instantiate`` builds the whole buffer. The bases (:class:`StorageConfig`,
:class:`SamplerConfig`, :class:`WriterConfig`, :class:`ReplayBufferBaseConfig`) leave
``_target_`` mandatory. A parameter whose default a YAML file cannot write (a nested key
tuple such as ``truncated_key``, a dtype) is not a field: the class's default applies.
:func:`register_configs` stores the buffers in Hydra's ``ConfigStore`` (group
``replay_buffer``, and its sub-groups ``replay_buffer/storage``, ``replay_buffer/sampler``
and ``replay_buffer/writer``) through the ``rl_stack.configs`` entry point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, make_dataclass
from typing import Any

from rl_buffers import SamplerEnsemble, StorageEnsemble, WriterEnsemble

_MISSING = "???"  # OmegaConf's mandatory value


def _listed(name: str, value: Any) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(
            f"{name}: expected a list of configs with a _target_, got {type(value).__name__}. "
            f"Write it as a YAML list."
        )
    return list(value)


def storage_ensemble(storages: Sequence[Any], transforms: Sequence[Any] | None = None) -> Any:
    """``StorageEnsembleConfig``'s target: ``StorageEnsemble(*storages, transforms=...)``
    (TorchRL's field name ``storages``).

    Raises:
        TypeError: ``storages`` is not a list.
    """
    return StorageEnsemble(
        *_listed("StorageEnsembleConfig.storages", storages), transforms=transforms
    )


def sampler_ensemble(
    samplers: Sequence[Any],
    p: Sequence[float] | None = None,
    sample_from_all: bool = False,
    num_buffer_sampled: int | None = None,
) -> Any:
    """``SamplerEnsembleConfig``'s target: ``SamplerEnsemble(*samplers, ...)`` (TorchRL's
    field name ``samplers``).

    Raises:
        TypeError: ``samplers`` is not a list.
    """
    return SamplerEnsemble(
        *_listed("SamplerEnsembleConfig.samplers", samplers),
        p=None if p is None else list(p),
        sample_from_all=sample_from_all,
        num_buffer_sampled=num_buffer_sampled,
    )


def writer_ensemble(writers: Sequence[Any]) -> Any:
    """``WriterEnsembleConfig``'s target: ``WriterEnsemble(*writers)`` (TorchRL's field name
    ``writers``).

    Raises:
        TypeError: ``writers`` is not a list.
    """
    return WriterEnsemble(*_listed("WriterEnsembleConfig.writers", writers))


# Storages.


@dataclass
class StorageConfig:
    """The base of the storage configs: ``_target_`` names a :class:`rl_buffers.Storage`."""

    _target_: str = _MISSING


@dataclass
class ListStorageConfig(StorageConfig):
    """:class:`rl_buffers.ListStorage`."""

    max_size: int = 100_000
    compilable: bool = False
    _target_: str = "rl_buffers.ListStorage"


@dataclass
class TensorStorageConfig(StorageConfig):
    """:class:`rl_buffers.TensorStorage` (``storage``: the tensor or TensorDict to wrap, None
    for a lazily allocated one)."""

    storage: Any = None
    max_size: int | None = None
    device: str | None = None
    ndim: int = 1
    compilable: bool = False
    _target_: str = "rl_buffers.TensorStorage"


@dataclass
class LazyTensorStorageConfig(StorageConfig):
    """:class:`rl_buffers.LazyTensorStorage`."""

    max_size: int = 100_000
    device: str | None = None
    ndim: int = 1
    compilable: bool = False
    _target_: str = "rl_buffers.LazyTensorStorage"


@dataclass
class LazyMemmapStorageConfig(StorageConfig):
    """:class:`rl_buffers.LazyMemmapStorage`."""

    max_size: int = 100_000
    scratch_dir: str | None = None
    ndim: int = 1
    _target_: str = "rl_buffers.LazyMemmapStorage"


@dataclass
class LazyStackStorageConfig(StorageConfig):
    """:class:`rl_buffers.LazyStackStorage`."""

    max_size: int | None = None
    stack_dim: int = 0
    device: str | None = None
    compilable: bool = False
    _target_: str = "rl_buffers.LazyStackStorage"


@dataclass
class StorageEnsembleConfig(StorageConfig):
    """:class:`rl_buffers.StorageEnsemble` of ``storages`` (storage configs), with one
    transform (or None) per storage in ``transforms``."""

    storages: list[Any] = _MISSING  # type: ignore[assignment]
    transforms: Any = None
    _target_: str = "rl_buffers.configs.storage_ensemble"


# Samplers.


@dataclass
class SamplerConfig:
    """The base of the sampler configs: ``_target_`` names a :class:`rl_buffers.Sampler`."""

    _target_: str = _MISSING


@dataclass
class RandomSamplerConfig(SamplerConfig):
    """:class:`rl_buffers.RandomSampler`."""

    _target_: str = "rl_buffers.RandomSampler"


@dataclass
class SamplerWithoutReplacementConfig(SamplerConfig):
    """:class:`rl_buffers.SamplerWithoutReplacement`."""

    drop_last: bool = False
    shuffle: bool = True
    _target_: str = "rl_buffers.SamplerWithoutReplacement"


@dataclass
class ConsumingSamplerConfig(SamplerConfig):
    """:class:`rl_buffers.ConsumingSampler`: each item retired after ``max_sample_count``
    draws."""

    max_sample_count: int = 1
    _target_: str = "rl_buffers.ConsumingSampler"


@dataclass
class PrioritizedSamplerConfig(SamplerConfig):
    """:class:`rl_buffers.PrioritizedSampler`."""

    max_capacity: int = 100_000
    alpha: float = 0.6
    beta: float = 0.4
    eps: float = 1e-8
    _target_: str = "rl_buffers.PrioritizedSampler"


@dataclass
class SliceSamplerConfig(SamplerConfig):
    """:class:`rl_buffers.SliceSampler`."""

    num_slices: int | None = None
    slice_len: int | None = None
    end_key: Any = None
    traj_key: Any = None
    strict_length: bool = True
    cache_values: bool = False
    _target_: str = "rl_buffers.SliceSampler"


@dataclass
class SliceSamplerWithoutReplacementConfig(SamplerConfig):
    """:class:`rl_buffers.SliceSamplerWithoutReplacement`."""

    num_slices: int | None = None
    slice_len: int | None = None
    drop_last: bool = False
    shuffle: bool = True
    end_key: Any = None
    traj_key: Any = None
    strict_length: bool = True
    _target_: str = "rl_buffers.SliceSamplerWithoutReplacement"


@dataclass
class PrioritizedSliceSamplerConfig(SamplerConfig):
    """:class:`rl_buffers.PrioritizedSliceSampler` (``max_capacity``, ``alpha`` and ``beta``
    are mandatory, as the class's)."""

    max_capacity: int = _MISSING  # type: ignore[assignment]
    alpha: float = _MISSING  # type: ignore[assignment]
    beta: float = _MISSING  # type: ignore[assignment]
    eps: float = 1e-8
    reduction: str = "max"
    num_slices: int | None = None
    slice_len: int | None = None
    end_key: Any = None
    traj_key: Any = None
    strict_length: bool = True
    cache_values: bool = False
    _target_: str = "rl_buffers.PrioritizedSliceSampler"


@dataclass
class StreamingSliceSamplerConfig(SamplerConfig):
    """:class:`rl_buffers.StreamingSliceSampler` (``slice_len`` is mandatory)."""

    slice_len: int = _MISSING  # type: ignore[assignment]
    end_key: Any = None
    traj_key: Any = None
    cache_values: bool = False
    strict_length: bool = True
    pad_output: bool = False
    _target_: str = "rl_buffers.StreamingSliceSampler"


@dataclass
class SamplerEnsembleConfig(SamplerConfig):
    """:class:`rl_buffers.SamplerEnsemble` of ``samplers`` (sampler configs)."""

    samplers: list[Any] = _MISSING  # type: ignore[assignment]
    p: list[float] | None = None
    sample_from_all: bool = False
    num_buffer_sampled: int | None = None
    _target_: str = "rl_buffers.configs.sampler_ensemble"


# Writers.


@dataclass
class WriterConfig:
    """The base of the writer configs: ``_target_`` names a :class:`rl_buffers.Writer`."""

    _target_: str = _MISSING


@dataclass
class RoundRobinWriterConfig(WriterConfig):
    """:class:`rl_buffers.RoundRobinWriter`."""

    compilable: bool = False
    _target_: str = "rl_buffers.RoundRobinWriter"


@dataclass
class TensorDictRoundRobinWriterConfig(WriterConfig):
    """:class:`rl_buffers.TensorDictRoundRobinWriter`."""

    compilable: bool = False
    _target_: str = "rl_buffers.TensorDictRoundRobinWriter"


@dataclass
class TensorDictMaxValueWriterConfig(WriterConfig):
    """:class:`rl_buffers.TensorDictMaxValueWriter`: keeps the items of highest ``rank_key``."""

    rank_key: Any = None
    reduction: str = "sum"
    compilable: bool = False
    _target_: str = "rl_buffers.TensorDictMaxValueWriter"


@dataclass
class ImmutableDatasetWriterConfig(WriterConfig):
    """:class:`rl_buffers.ImmutableDatasetWriter`: refuses every write (``dataset`` names the
    buffer in its errors)."""

    dataset: str | None = None
    compilable: bool = False
    _target_: str = "rl_buffers.ImmutableDatasetWriter"


@dataclass
class WriterEnsembleConfig(WriterConfig):
    """:class:`rl_buffers.WriterEnsemble` of ``writers`` (writer configs)."""

    writers: list[Any] = _MISSING  # type: ignore[assignment]
    _target_: str = "rl_buffers.configs.writer_ensemble"


# Buffers.


@dataclass
class ReplayBufferBaseConfig:
    """The base of the buffer configs: a storage, a sampler and a writer config, and
    ``_target_`` naming the buffer class."""

    storage: Any = field(default_factory=LazyTensorStorageConfig)
    sampler: Any = field(default_factory=RandomSamplerConfig)
    writer: Any = field(default_factory=RoundRobinWriterConfig)
    _target_: str = _MISSING


@dataclass
class ReplayBufferConfig(ReplayBufferBaseConfig):
    """:class:`rl_buffers.ReplayBuffer`."""

    batch_size: int | None = None
    prefetch: int | None = None
    pin_memory: bool = False
    consume_after_n_samples: int | None = None
    _target_: str = "rl_buffers.ReplayBuffer"


@dataclass
class TensorDictReplayBufferConfig(ReplayBufferConfig):
    """:class:`rl_buffers.TensorDictReplayBuffer`."""

    priority_key: str = "td_error"
    _target_: str = "rl_buffers.TensorDictReplayBuffer"


@dataclass
class PrioritizedReplayBufferConfig(TensorDictReplayBufferConfig):
    """A :class:`rl_buffers.TensorDictReplayBuffer` with a prioritized sampler."""

    sampler: Any = field(default_factory=PrioritizedSamplerConfig)


#: The ``replay_buffer`` group's options.
REPLAY_BUFFER_CONFIGS: dict[str, type] = {
    "tensordict": TensorDictReplayBufferConfig,
    "prioritized": PrioritizedReplayBufferConfig,
    "plain": ReplayBufferConfig,
}
#: The ``replay_buffer/storage`` group's options.
STORAGE_CONFIGS: dict[str, type] = {
    "list": ListStorageConfig,
    "tensor": TensorStorageConfig,
    "lazy_tensor": LazyTensorStorageConfig,
    "lazy_memmap": LazyMemmapStorageConfig,
    "lazy_stack": LazyStackStorageConfig,
    "ensemble": StorageEnsembleConfig,
}
#: The ``replay_buffer/sampler`` group's options.
SAMPLER_CONFIGS: dict[str, type] = {
    "random": RandomSamplerConfig,
    "without_replacement": SamplerWithoutReplacementConfig,
    "consuming": ConsumingSamplerConfig,
    "prioritized": PrioritizedSamplerConfig,
    "slice": SliceSamplerConfig,
    "slice_without_replacement": SliceSamplerWithoutReplacementConfig,
    "prioritized_slice": PrioritizedSliceSamplerConfig,
    "streaming_slice": StreamingSliceSamplerConfig,
    "ensemble": SamplerEnsembleConfig,
}
#: The ``replay_buffer/writer`` group's options.
WRITER_CONFIGS: dict[str, type] = {
    "round_robin": RoundRobinWriterConfig,
    "tensordict_round_robin": TensorDictRoundRobinWriterConfig,
    "tensordict_max_value": TensorDictMaxValueWriterConfig,
    "immutable_dataset": ImmutableDatasetWriterConfig,
    "ensemble": WriterEnsembleConfig,
}


def composed(node: type, sampler: str = "random") -> type:
    """``node`` as stored in the ``replay_buffer`` group: its storage, sampler and writer come
    from the sub-groups through a defaults list (``lazy_tensor``, ``sampler``,
    ``round_robin``), so an override such as ``replay_buffer/sampler=slice`` swaps one of them
    for another type, which a merge into the typed default would refuse."""
    choices = [{"storage": "lazy_tensor"}, {"sampler": sampler}, {"writer": "round_robin"}]
    return make_dataclass(
        node.__name__,
        [
            ("defaults", list[Any], field(default_factory=lambda: ["_self_", *choices])),
            ("storage", Any, field(default=None)),
            ("sampler", Any, field(default=None)),
            ("writer", Any, field(default=None)),
        ],
        bases=(node,),
        namespace={"__doc__": node.__doc__, "__module__": __name__},
    )


def register_configs(store: Any = None) -> None:
    """Stores the ``replay_buffer`` group's options, and the storages, samplers and writers
    in its sub-groups (``replay_buffer/sampler=prioritized`` swaps a buffer's sampler), in
    Hydra's ``ConfigStore`` (or ``store``).

    Raises:
        ImportError: hydra is not installed (the message gives the install line).
    """
    if store is None:
        try:
            from hydra.core.config_store import ConfigStore
        except ImportError as err:
            raise ImportError(
                'rl_buffers.configs needs hydra-core: pip install "rl-buffers[hydra]"'
            ) from err
        store = ConfigStore.instance()
    for name, node in REPLAY_BUFFER_CONFIGS.items():
        sampler = "prioritized" if issubclass(node, PrioritizedReplayBufferConfig) else "random"
        store.store(
            group="replay_buffer", name=name, node=composed(node, sampler), provider="rl_buffers"
        )
    for group, options in (
        ("storage", STORAGE_CONFIGS),
        ("sampler", SAMPLER_CONFIGS),
        ("writer", WRITER_CONFIGS),
    ):
        for name, node in options.items():
            store.store(group=f"replay_buffer/{group}", name=name, node=node, provider="rl_buffers")
