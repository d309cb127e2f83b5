"""Hydra configs of the trainer hooks (TorchRL's ``configs.hooks``), derived from the hooks'
constructors. rl-train registers each hook of its ``hooks`` mapping
(``+hook@hooks.timing=log_timing``) with the trainer."""

from __future__ import annotations

from dataclasses import dataclass

from rl_objectives.configs._derive import MISSING, config_of
from rl_objectives.trainers import (
    BatchSubSampler,
    ClearCudaCache,
    CountFramesLog,
    EarlyStopping,
    LogScalar,
    LogTiming,
    RewardNormalizer,
    SelectKeys,
)


@dataclass
class HookConfig:
    """The base of the hook configs: ``_target_`` names a trainer hook."""

    _target_: str = MISSING


_HOOKS = (
    ClearCudaCache, CountFramesLog, EarlyStopping, LogScalar, LogTiming, SelectKeys,
    RewardNormalizer, BatchSubSampler,
)  # fmt: skip
#: ``<Hook>Config`` for each hook: hook name -> config class.
HOOK_CONFIGS: dict[str, type] = {
    cls.__name__: config_of(cls, f"{cls.__name__}Config", f"rl_objectives.trainers.{cls.__name__}")
    for cls in _HOOKS
}
ClearCudaCacheConfig = HOOK_CONFIGS["ClearCudaCache"]
CountFramesLogConfig = HOOK_CONFIGS["CountFramesLog"]
EarlyStoppingConfig = HOOK_CONFIGS["EarlyStopping"]
LogScalarConfig = HOOK_CONFIGS["LogScalar"]
LogTimingConfig = HOOK_CONFIGS["LogTiming"]
SelectKeysConfig = HOOK_CONFIGS["SelectKeys"]
RewardNormalizerConfig = HOOK_CONFIGS["RewardNormalizer"]
BatchSubSamplerConfig = HOOK_CONFIGS["BatchSubSampler"]
