"""Hydra configs of rl-buffers' storages, samplers, writers and buffers (needs
``pip install "rl-buffers[hydra]"``).

Typed dataclasses with a ``_target_``; a buffer config nests its storage, sampler and writer
configs, so ``instantiate`` builds the whole buffer. :func:`register_configs` stores the
buffers in Hydra's ``ConfigStore`` (group ``replay_buffer``) through the
``rl_stack.configs`` entry point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ListStorageConfig:
    """:class:`rl_buffers.ListStorage`."""

    max_size: int = 100_000
    _target_: str = "rl_buffers.ListStorage"


@dataclass
class LazyTensorStorageConfig:
    """:class:`rl_buffers.LazyTensorStorage`."""

    max_size: int = 100_000
    device: str | None = None
    ndim: int = 1
    _target_: str = "rl_buffers.LazyTensorStorage"


@dataclass
class LazyMemmapStorageConfig:
    """:class:`rl_buffers.LazyMemmapStorage`."""

    max_size: int = 100_000
    scratch_dir: str | None = None
    ndim: int = 1
    _target_: str = "rl_buffers.LazyMemmapStorage"


@dataclass
class RandomSamplerConfig:
    """:class:`rl_buffers.RandomSampler`."""

    _target_: str = "rl_buffers.RandomSampler"


@dataclass
class SamplerWithoutReplacementConfig:
    """:class:`rl_buffers.SamplerWithoutReplacement`."""

    drop_last: bool = False
    shuffle: bool = True
    _target_: str = "rl_buffers.SamplerWithoutReplacement"


@dataclass
class PrioritizedSamplerConfig:
    """:class:`rl_buffers.PrioritizedSampler`."""

    max_capacity: int = 100_000
    alpha: float = 0.6
    beta: float = 0.4
    eps: float = 1e-8
    _target_: str = "rl_buffers.PrioritizedSampler"


@dataclass
class SliceSamplerConfig:
    """:class:`rl_buffers.SliceSampler`."""

    num_slices: int | None = None
    slice_len: int | None = None
    strict_length: bool = True
    _target_: str = "rl_buffers.SliceSampler"


@dataclass
class RoundRobinWriterConfig:
    """:class:`rl_buffers.RoundRobinWriter`."""

    _target_: str = "rl_buffers.RoundRobinWriter"


@dataclass
class ReplayBufferConfig:
    """:class:`rl_buffers.ReplayBuffer`."""

    storage: Any = field(default_factory=LazyTensorStorageConfig)
    sampler: Any = field(default_factory=RandomSamplerConfig)
    writer: Any = field(default_factory=RoundRobinWriterConfig)
    batch_size: int | None = None
    prefetch: int | None = None
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


def register_configs(store: Any = None) -> None:
    """Stores the ``replay_buffer`` group's options in Hydra's ``ConfigStore`` (or ``store``).

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
        store.store(group="replay_buffer", name=name, node=node, provider="rl_buffers")
