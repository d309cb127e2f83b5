"""TorchRL's replay-buffer builder of ``torchrl.trainers.helpers``: :func:`make_replay_buffer`,
and its settings dataclass :class:`ReplayArgsConfig`.

The settings object ``cfg`` is anything that holds named settings: a mapping (a ``dict``), an
OmegaConf ``DictConfig``, a dataclass or a namespace. A setting it lacks takes the default of
:class:`ReplayArgsConfig`; ``batch_size`` (not one of its fields: TorchRL reads it from the
loss's settings) has none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import torch

from rl_buffers.replay_buffers import TensorDictReplayBuffer
from rl_buffers.samplers import PrioritizedSampler, RandomSampler
from rl_buffers.storages import LazyMemmapStorage

__all__ = ["ReplayArgsConfig", "make_replay_buffer"]


@dataclass
class ReplayArgsConfig:
    """The replay-buffer settings of :func:`make_replay_buffer` (TorchRL's helpers dataclass,
    typed: ``OmegaConf.structured(ReplayArgsConfig)`` refuses a wrong type or an unknown key,
    naming it).

    Attributes:
        buffer_size: items the buffer holds.
        prb: prioritized sampling instead of uniform.
        buffer_scratch_dir: the folder of the memory-mapped storage (None: a temporary one).
        buffer_prefetch: batches sampled ahead in a background thread (0: none).
    """

    buffer_size: int = 1_000_000
    prb: bool = False
    buffer_scratch_dir: str | None = None
    buffer_prefetch: int = 10


# The settings make_replay_buffer reads, with their defaults (``None``: required).
_DEFAULTS: dict[str, Any] = {**asdict(ReplayArgsConfig()), "batch_size": None}

_UNSET = object()


def _setting(owner: str, cfg: Any, name: str, kind: type | tuple[type, ...]) -> Any:
    default = _DEFAULTS[name]
    value = cfg.get(name, _UNSET) if isinstance(cfg, Mapping) else getattr(cfg, name, _UNSET)
    if value is _UNSET:
        if name == "batch_size":
            raise KeyError(f"{owner}: cfg has no {name!r} setting; add it to the config.")
        return default
    if value is None and default is None:
        return value
    if isinstance(value, bool) and kind is not bool:
        raise TypeError(f"{owner}: cfg.{name} must be {_kind(kind)}, got a bool ({value!r}).")
    if not isinstance(value, kind):
        raise TypeError(
            f"{owner}: cfg.{name} must be {_kind(kind)}, got {type(value).__name__} ({value!r})."
        )
    return value


def _kind(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def make_replay_buffer(device: torch.device | str | int, cfg: Any) -> TensorDictReplayBuffer:
    """A :class:`TensorDictReplayBuffer` over a :class:`LazyMemmapStorage` of
    ``cfg.buffer_size`` items (memory-mapped under ``cfg.buffer_scratch_dir``, a temporary
    folder when None), sampling ``cfg.batch_size`` items uniformly, or, with ``cfg.prb``, by
    priority (:class:`PrioritizedSampler` with ``alpha=0.7``, ``beta=0.5``), and prefetching
    ``cfg.buffer_prefetch`` batches in a background thread (0: none). Samples are pinned in
    page-locked memory when ``device`` is not the CPU.

    Args:
        device: the device the samples go to (pinned memory when it is not the CPU). The
            storage stays on the CPU.
        cfg: the settings (a mapping, a ``DictConfig``, a dataclass, a namespace); missing
            ones take TorchRL's defaults (``buffer_size=1_000_000``, ``prb=False``, ``buffer_scratch_dir=None``, ``buffer_prefetch=10``), ``batch_size`` is required.

    Returns:
        The buffer.

    Raises:
        KeyError: ``cfg`` has no ``batch_size``.
        TypeError: a setting of the wrong type (the message names it).
        ValueError: ``cfg.buffer_size`` or ``cfg.batch_size`` below 1, or
            ``cfg.buffer_prefetch`` below 0.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> cfg = {"buffer_size": 100, "batch_size": 4, "buffer_prefetch": 0}
        >>> rb = make_replay_buffer("cpu", cfg)
        >>> _ = rb.extend(TensorDict(obs=torch.arange(10.0)[:, None], batch_size=[10]))
        >>> print(len(rb), rb.sample().shape)
        10 torch.Size([4])
    """
    owner = "make_replay_buffer"
    try:
        device = torch.device(device)
    except (TypeError, RuntimeError) as err:
        raise TypeError(
            f"{owner}: device must be a torch.device, a device string or an index, got {device!r}."
        ) from err
    buffer_size = _setting(owner, cfg, "buffer_size", int)
    batch_size = _setting(owner, cfg, "batch_size", int)
    prefetch = _setting(owner, cfg, "buffer_prefetch", int)
    prb = _setting(owner, cfg, "prb", bool)
    scratch_dir = _setting(owner, cfg, "buffer_scratch_dir", (str, os.PathLike))
    for name, value, low in (("buffer_size", buffer_size, 1), ("batch_size", batch_size, 1)):
        if value < low:
            raise ValueError(f"{owner}: cfg.{name} must be >= {low}, got {value}.")
    if prefetch < 0:
        raise ValueError(f"{owner}: cfg.buffer_prefetch must be >= 0, got {prefetch}.")
    if prb:
        sampler = PrioritizedSampler(max_capacity=buffer_size, alpha=0.7, beta=0.5)
    else:
        sampler = RandomSampler()
    return TensorDictReplayBuffer(
        storage=LazyMemmapStorage(buffer_size, scratch_dir=scratch_dir),
        sampler=sampler,
        pin_memory=device.type != "cpu",
        prefetch=prefetch or None,
        batch_size=batch_size,
    )
