"""Hydra configs of rl-collectors' collectors, weight updaters and weight-sync schemes (needs
``pip install "rl-collectors[hydra]"``).

Typed dataclasses with a ``_target_``. The env and the policy are not configured here: a
collector config is partial, and rl-train builds the env and the policy first and passes them
when it instantiates the collector (``instantiate(cfg, env, policy)``); a multi-process
collector is given an env factory instead (one per worker: ``num_workers`` copies of it). A
weight updater config is partial too (its policy weights or collector come from the built
parts); a weight-sync scheme config builds the scheme. :func:`register_configs` stores them in
Hydra's ``ConfigStore`` (groups ``collector``, ``weight_updater`` and ``weight_sync_scheme``)
through the ``rl_stack.configs`` entry point.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rl_collectors import MultiaSyncDataCollector, MultiSyncDataCollector
from rl_core import EnvBase

_MISSING = "???"  # OmegaConf's mandatory value


def _env_factories(name: str, create_env_fn: Any, num_workers: int) -> list[Callable[[], Any]]:
    if isinstance(create_env_fn, EnvBase) or (
        isinstance(create_env_fn, Sequence) and any(isinstance(f, EnvBase) for f in create_env_fn)
    ):
        raise TypeError(
            f"{name}.create_env_fn: expected an env factory (or a list of them) that each worker "
            f"calls, got an env. Give the env's config `_partial_: true`, or pass "
            f"functools.partial(MyEnv, ...)."
        )
    if isinstance(create_env_fn, Sequence):
        return list(create_env_fn)
    if not callable(create_env_fn):
        raise TypeError(
            f"{name}.create_env_fn: expected an env factory, got {type(create_env_fn).__name__}."
        )
    if not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"{name}.num_workers: expected an int >= 1, got {num_workers!r}.")
    return [create_env_fn] * num_workers


def multi_sync_collector(
    create_env_fn: Any, policy: Any = None, *, num_workers: int = 2, **kwargs: Any
) -> MultiSyncDataCollector:
    """``MultiSyncCollectorConfig``'s target: a ``MultiSyncCollector`` of ``num_workers``
    workers that each call ``create_env_fn`` (or one worker per factory of a list).

    Raises:
        TypeError: ``create_env_fn`` is an env, not a factory.
        ValueError: ``num_workers`` is not a positive int.
    """
    factories = _env_factories("MultiSyncCollectorConfig", create_env_fn, num_workers)
    return MultiSyncDataCollector(factories, policy, **kwargs)


def multi_async_collector(
    create_env_fn: Any, policy: Any = None, *, num_workers: int = 2, **kwargs: Any
) -> MultiaSyncDataCollector:
    """``MultiAsyncCollectorConfig``'s target: a ``MultiAsyncCollector`` of ``num_workers``
    workers that each call ``create_env_fn`` (or one worker per factory of a list).

    Raises:
        TypeError: ``create_env_fn`` is an env, not a factory.
        ValueError: ``num_workers`` is not a positive int.
    """
    factories = _env_factories("MultiAsyncCollectorConfig", create_env_fn, num_workers)
    return MultiaSyncDataCollector(factories, policy, **kwargs)


def async_collector(create_env_fn: Any, policy: Any = None, **kwargs: Any) -> Any:
    """``AsyncCollectorConfig``'s target: an ``AsyncCollector`` (one background worker) that
    calls ``create_env_fn``.

    Raises:
        TypeError: ``create_env_fn`` is an env, not a factory.
    """
    from rl_collectors import AsyncCollector

    (factory,) = _env_factories("AsyncCollectorConfig", create_env_fn, 1)
    return AsyncCollector(factory, policy, **kwargs)


# Collectors (partial: called with the env, or an env factory, and the policy).


@dataclass
class BaseCollectorConfig:
    """The base of the collector configs: ``_target_`` names the collector (or its builder);
    the config is partial, called with the env and the policy."""

    _target_: str = _MISSING
    _partial_: bool = True
    #: Whether the collector is called with an env factory (its workers build their envs)
    #: rather than a built env; rl-train reads it.
    env_factory: ClassVar[bool] = False


@dataclass
class CollectorConfig(BaseCollectorConfig):
    """:class:`rl_collectors.Collector`: steps the env in this process."""

    frames_per_batch: int = 1000
    total_frames: int = -1
    init_random_frames: int = 0
    max_frames_per_traj: int | None = None
    reset_at_each_iter: bool = False
    split_trajs: bool = False
    device: str | None = None
    storing_device: str | None = None
    env_device: str | None = None
    policy_device: str | None = None
    reset_when_done: bool = True
    trust_policy: bool = False
    set_truncated: bool = False
    track_traj_ids: bool = True
    _target_: str = "rl_collectors.Collector"


@dataclass
class SyncDataCollectorConfig(CollectorConfig):
    """:class:`rl_collectors.SyncDataCollector`: steps the env in this process."""

    _target_: str = "rl_collectors.SyncDataCollector"


@dataclass
class AsyncCollectorConfig(CollectorConfig):
    """:class:`rl_collectors.AsyncCollector`: collects the next batch in a background process
    (called with an env factory)."""

    env_factory: ClassVar[bool] = True
    _target_: str = "rl_collectors.configs.async_collector"


@dataclass
class MultiSyncCollectorConfig(CollectorConfig):
    """:class:`rl_collectors.MultiSyncCollector` of ``num_workers`` worker processes (called
    with an env factory); each batch stacks one from every worker."""

    num_workers: int = 2
    mp_start_method: str | None = None
    env_factory: ClassVar[bool] = True
    _target_: str = "rl_collectors.configs.multi_sync_collector"


@dataclass
class MultiAsyncCollectorConfig(MultiSyncCollectorConfig):
    """:class:`rl_collectors.MultiAsyncCollector` of ``num_workers`` worker processes (called
    with an env factory); each batch is the first one a worker finishes."""

    _target_: str = "rl_collectors.configs.multi_async_collector"


# Weight updaters (partial: called with the policy weights or the collector).


@dataclass
class WeightUpdaterConfig:
    """The base of the weight-updater configs: ``_target_`` names a
    :class:`rl_collectors.WeightUpdaterBase`; partial."""

    _target_: str = _MISSING
    _partial_: bool = True


@dataclass
class VanillaWeightUpdaterConfig(WeightUpdaterConfig):
    """:class:`rl_collectors.VanillaWeightUpdater` (called with ``policy_weights=``)."""

    _target_: str = "rl_collectors.VanillaWeightUpdater"


@dataclass
class MultiProcessedWeightUpdaterConfig(WeightUpdaterConfig):
    """:class:`rl_collectors.MultiProcessedWeightUpdater` (called with
    ``get_server_weights=`` and ``policy_weights=``)."""

    _target_: str = "rl_collectors.MultiProcessedWeightUpdater"


@dataclass
class RayWeightUpdaterConfig(WeightUpdaterConfig):
    """:class:`rl_collectors.RayWeightUpdater` (called with the policy weights and the remote
    collectors); pushes to a collector at most every ``max_interval`` updates."""

    max_interval: int = 0
    _target_: str = "rl_collectors.RayWeightUpdater"


@dataclass
class RemoteModuleWeightUpdaterConfig(WeightUpdaterConfig):
    """:class:`rl_collectors.RemoteModuleWeightUpdater`: weights are pushed by the caller."""

    _target_: str = "rl_collectors.RemoteModuleWeightUpdater"


@dataclass
class RPCWeightUpdaterConfig(WeightUpdaterConfig):
    """:class:`rl_collectors.distributed.RPCWeightUpdater` (called with the RPC collector)."""

    _target_: str = "rl_collectors.distributed.RPCWeightUpdater"


@dataclass
class DistributedWeightUpdaterConfig(WeightUpdaterConfig):
    """:class:`rl_collectors.distributed.DistributedWeightUpdater` (called with the
    distributed collector)."""

    _target_: str = "rl_collectors.distributed.DistributedWeightUpdater"


# Weight-sync schemes (built whole).


@dataclass
class WeightSyncSchemeConfig:
    """The base of the weight-sync scheme configs: ``strategy`` is how weights are extracted
    (``"tensordict"`` or ``"state_dict"``); ``_target_`` names the scheme."""

    strategy: str = "tensordict"
    _target_: str = _MISSING


@dataclass
class MultiProcessWeightSyncSchemeConfig(WeightSyncSchemeConfig):
    """:class:`rl_collectors.weight_sync.MultiProcessWeightSyncScheme`: weights sent through
    pipes."""

    _target_: str = "rl_collectors.weight_sync.MultiProcessWeightSyncScheme"


@dataclass
class SharedMemWeightSyncSchemeConfig(WeightSyncSchemeConfig):
    """:class:`rl_collectors.weight_sync.SharedMemWeightSyncScheme`: weights in shared
    memory."""

    _target_: str = "rl_collectors.weight_sync.SharedMemWeightSyncScheme"


@dataclass
class NoWeightSyncSchemeConfig(WeightSyncSchemeConfig):
    """:class:`rl_collectors.weight_sync.NoWeightSyncScheme`: weights are never sent."""

    _target_: str = "rl_collectors.weight_sync.NoWeightSyncScheme"


@dataclass
class DistributedWeightSyncSchemeConfig(WeightSyncSchemeConfig):
    """:class:`rl_collectors.weight_sync.DistributedWeightSyncScheme` (``torch.distributed``
    ``backend``)."""

    backend: str = "gloo"
    _target_: str = "rl_collectors.weight_sync.DistributedWeightSyncScheme"


@dataclass
class RayWeightSyncSchemeConfig(WeightSyncSchemeConfig):
    """:class:`rl_collectors.weight_sync.RayWeightSyncScheme`."""

    backend: str = "gloo"
    _target_: str = "rl_collectors.weight_sync.RayWeightSyncScheme"


@dataclass
class RPCWeightSyncSchemeConfig(WeightSyncSchemeConfig):
    """:class:`rl_collectors.weight_sync.RPCWeightSyncScheme` (workers named
    ``worker_names`` or ``<name_prefix><i>``)."""

    worker_names: list[str] | None = None
    name_prefix: str = "COLLECTOR_NODE_"
    timeout: float = 60.0
    _target_: str = "rl_collectors.weight_sync.RPCWeightSyncScheme"


@dataclass
class RayModuleTransformSchemeConfig(WeightSyncSchemeConfig):
    """:class:`rl_collectors.weight_sync.RayModuleTransformScheme`: weights of a Ray module
    transform's module (``transform``, given when built)."""

    backend: str = "gloo"
    transform: Any = None
    _target_: str = "rl_collectors.weight_sync.RayModuleTransformScheme"


#: The ``collector`` group's options.
COLLECTOR_CONFIGS: dict[str, type] = {
    "sync": SyncDataCollectorConfig,
    "collector": CollectorConfig,
    "async": AsyncCollectorConfig,
    "multi_sync": MultiSyncCollectorConfig,
    "multi_async": MultiAsyncCollectorConfig,
}
#: The ``weight_updater`` group's options.
WEIGHT_UPDATER_CONFIGS: dict[str, type] = {
    "vanilla": VanillaWeightUpdaterConfig,
    "multi_processed": MultiProcessedWeightUpdaterConfig,
    "ray": RayWeightUpdaterConfig,
    "remote_module": RemoteModuleWeightUpdaterConfig,
    "rpc": RPCWeightUpdaterConfig,
    "distributed": DistributedWeightUpdaterConfig,
}
#: The ``weight_sync_scheme`` group's options.
WEIGHT_SYNC_SCHEME_CONFIGS: dict[str, type] = {
    "multi_process": MultiProcessWeightSyncSchemeConfig,
    "shared_mem": SharedMemWeightSyncSchemeConfig,
    "none": NoWeightSyncSchemeConfig,
    "distributed": DistributedWeightSyncSchemeConfig,
    "ray": RayWeightSyncSchemeConfig,
    "rpc": RPCWeightSyncSchemeConfig,
    "ray_module_transform": RayModuleTransformSchemeConfig,
}


def register_configs(store: Any = None) -> None:
    """Stores the ``collector``, ``weight_updater`` and ``weight_sync_scheme`` groups' options
    in Hydra's ``ConfigStore`` (or ``store``).

    Raises:
        ImportError: hydra is not installed (the message gives the install line).
    """
    if store is None:
        try:
            from hydra.core.config_store import ConfigStore
        except ImportError as err:
            raise ImportError(
                'rl_collectors.configs needs hydra-core: pip install "rl-collectors[hydra]"'
            ) from err
        store = ConfigStore.instance()
    for group, options in (
        ("collector", COLLECTOR_CONFIGS),
        ("weight_updater", WEIGHT_UPDATER_CONFIGS),
        ("weight_sync_scheme", WEIGHT_SYNC_SCHEME_CONFIGS),
    ):
        for name, node in options.items():
            store.store(group=group, name=name, node=node, provider="rl_collectors")
