"""TorchRL's collector builders of ``torchrl.trainers.helpers``: :func:`sync_sync_collector`,
:func:`sync_async_collector`, :func:`make_collector_offpolicy`, :func:`make_collector_onpolicy`.

They take env factories (callables returning an rl-core ``EnvBase``), never build an env class
themselves: where several envs share one collector, the caller names the batched env that
groups them (``batched_env=rl_envs.ParallelEnv`` or ``rl_envs.SerialEnv``), where TorchRL
always builds a ``ParallelEnv``.

The settings object ``cfg`` of the ``make_collector_*`` builders is anything that holds named
settings: a mapping (a ``dict``, an OmegaConf ``DictConfig``), a dataclass or a namespace. A
setting it lacks takes the default of :class:`OnPolicyCollectorConfig` /
:class:`OffPolicyCollectorConfig` (TorchRL's helpers dataclasses).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from rl_collectors.base import BaseCollector
from rl_collectors.multi_async import MultiAsyncCollector
from rl_collectors.multi_sync import MultiSyncCollector
from rl_collectors.postprocs import MultiStep
from rl_collectors.sync import Collector
from rl_core import EnvBase, ExplorationType

__all__ = [
    "OffPolicyCollectorConfig",
    "OnPolicyCollectorConfig",
    "make_collector_offpolicy",
    "make_collector_onpolicy",
    "sync_async_collector",
    "sync_sync_collector",
]

EnvFactory = Callable[..., EnvBase]


@dataclass
class OnPolicyCollectorConfig:
    """The settings of :func:`make_collector_onpolicy` (TorchRL's helpers dataclass, typed:
    ``OmegaConf.structured(OnPolicyCollectorConfig)`` refuses a wrong type or an unknown key,
    naming it). ``pin_memory`` is kept for TorchRL's field list; the collectors here do not
    pin."""

    collector_device: Any = field(default_factory=lambda: ["cpu"])
    pin_memory: bool = False
    frames_per_batch: int = 1000
    total_frames: int = 50_000_000
    num_workers: int = 32
    env_per_collector: int = 8
    seed: int = 42
    exploration_type: str = "random"
    async_collection: bool = False


@dataclass
class OffPolicyCollectorConfig(OnPolicyCollectorConfig):
    """The settings of :func:`make_collector_offpolicy`: :class:`OnPolicyCollectorConfig`'s,
    multi-step returns and the random warm-up frames."""

    multi_step: bool = False
    n_steps_return: int = 3
    init_random_frames: int = 50_000


# The builders' defaults: the dataclasses', plus the env's max_frames_per_traj (TorchRL's
# EnvConfig) and the loss's gamma that multi-step returns read.
_DEFAULTS: dict[str, Any] = {
    **asdict(OffPolicyCollectorConfig()),
    "max_frames_per_traj": 1000,
    "gamma": 0.99,
}
_UNSET = object()


def _setting(owner: str, cfg: Any, name: str, kind: type | tuple[type, ...]) -> Any:
    value = cfg.get(name, _UNSET) if isinstance(cfg, Mapping) else getattr(cfg, name, _UNSET)
    if value is _UNSET:
        return _DEFAULTS[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise TypeError(
            f"{owner}: cfg.{name} must be {' or '.join(k.__name__ for k in kinds)}, got "
            f"{type(value).__name__} ({value!r})."
        )
    return value


def _count(owner: str, name: str, value: Any, *, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{owner}: {name} must be an int >= {low}, got {value!r}.")
    return value


def _split(
    owner: str,
    env_fns: EnvFactory | Sequence[EnvFactory],
    env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
    num_env_per_collector: int | None,
    num_collectors: int | None,
) -> tuple[list[list[EnvFactory]], int, int]:
    """The factories of each collector (kwargs bound), their count per collector, and the
    number of collectors; a single factory is repeated ``num_env_per_collector *
    num_collectors`` times, a list is cut into consecutive groups."""
    if isinstance(env_fns, Sequence) and not isinstance(env_fns, str):
        fns = list(env_fns)
        if not fns:
            raise ValueError(f"{owner}: env_fns is an empty list; pass at least one env factory.")
        if num_env_per_collector is None and num_collectors is None:
            raise ValueError(
                f"{owner}: with a list of env_fns, pass num_env_per_collector or num_collectors "
                f"(how to share the {len(fns)} envs between collectors)."
            )
        if num_env_per_collector is None:
            num_collectors = _count(owner, "num_collectors", num_collectors)
            num_env_per_collector = -(len(fns) // -num_collectors)
        elif num_collectors is None:
            num_env_per_collector = _count(owner, "num_env_per_collector", num_env_per_collector)
            num_collectors = -(len(fns) // -num_env_per_collector)
        elif num_env_per_collector * num_collectors < len(fns):
            raise ValueError(
                f"{owner}: num_env_per_collector * num_collectors = "
                f"{num_env_per_collector * num_collectors} is less than the {len(fns)} env_fns; "
                f"raise one of them."
            )
    elif callable(env_fns):
        if num_env_per_collector is None or num_collectors is None:
            raise ValueError(
                f"{owner}: a single env factory needs both num_env_per_collector and "
                f"num_collectors (got {num_env_per_collector!r} and {num_collectors!r})."
            )
        num_env_per_collector = _count(owner, "num_env_per_collector", num_env_per_collector)
        num_collectors = _count(owner, "num_collectors", num_collectors)
        fns = [env_fns] * (num_env_per_collector * num_collectors)
    else:
        raise TypeError(
            f"{owner}: env_fns must be an env factory or a list of them, got "
            f"{type(env_fns).__name__}."
        )
    for i, fn in enumerate(fns):
        if not callable(fn):
            raise TypeError(f"{owner}: env_fns[{i}] is not callable ({type(fn).__name__}).")
    if env_kwargs is None:
        kwargs_list: list[Mapping[str, Any]] = [{}] * len(fns)
    elif isinstance(env_kwargs, Mapping):
        kwargs_list = [env_kwargs] * len(fns)
    elif isinstance(env_kwargs, Sequence) and len(env_kwargs) == len(fns):
        kwargs_list = list(env_kwargs)
    else:
        raise ValueError(
            f"{owner}: env_kwargs must be None, a dict, or one dict per env factory "
            f"({len(fns)}), got {env_kwargs!r}."
        )
    bound = [functools.partial(fn, **kw) if kw else fn for fn, kw in zip(fns, kwargs_list)]
    groups = [
        bound[i : i + num_env_per_collector] for i in range(0, len(bound), num_env_per_collector)
    ]
    if len(groups) != num_collectors:
        raise ValueError(
            f"{owner}: the {len(bound)} env_fns make {len(groups)} groups of "
            f"{num_env_per_collector}, not num_collectors={num_collectors}; pass a matching "
            f"num_env_per_collector."
        )
    return groups, num_env_per_collector, num_collectors


def _batched_factory(batched_env: Callable[..., EnvBase], fns: list[EnvFactory]) -> EnvFactory:
    return functools.partial(batched_env, len(fns), fns)


def _make_collector(
    owner: str,
    collector_class: type[BaseCollector],
    env_fns: EnvFactory | Sequence[EnvFactory],
    env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
    num_env_per_collector: int | None,
    num_collectors: int | None,
    batched_env: Callable[..., EnvBase] | None,
    kwargs: dict[str, Any],
) -> BaseCollector:
    groups, per_collector, _ = _split(
        owner, env_fns, env_kwargs, num_env_per_collector, num_collectors
    )
    if per_collector == 1:
        factories = [group[0] for group in groups]
    elif batched_env is None:
        raise ValueError(
            f"{owner}: {per_collector} envs per collector need batched_env, the batched env "
            f"that runs them together (e.g. batched_env=rl_envs.ParallelEnv or "
            f"rl_envs.SerialEnv); or pass num_env_per_collector=1."
        )
    else:
        factories = [_batched_factory(batched_env, group) for group in groups]
    max_frames = kwargs.get("max_frames_per_traj")
    if max_frames is not None and max_frames <= 0:
        kwargs["max_frames_per_traj"] = None  # TorchRL's -1: no limit
    if collector_class is MultiSyncCollector and len(factories) == 1:
        return Collector(factories[0], **kwargs)
    return collector_class(factories, **kwargs)


def sync_sync_collector(
    env_fns: EnvFactory | Sequence[EnvFactory],
    env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
    num_env_per_collector: int | None = None,
    num_collectors: int | None = None,
    *,
    batched_env: Callable[..., EnvBase] | None = None,
    **kwargs: Any,
) -> Collector | MultiSyncCollector:
    """Synchronous collectors, each running its envs synchronously: a :class:`Collector` in
    this process when there is one collector, else a :class:`MultiSyncCollector` with one
    worker process per collector, whose batches gather every worker's.

    The envs are ``env_fns`` (one factory, built ``num_env_per_collector * num_collectors``
    times, or a list of factories cut into consecutive groups of ``num_env_per_collector``),
    each called with ``env_kwargs`` (one dict for all, or one per factory). A collector with
    more than one env runs them in ``batched_env(n, factories)``.

    Args:
        env_fns: an env factory, or a list of them.
        env_kwargs: keyword arguments of the factories: None, a dict, or a list of dicts.
        num_env_per_collector: envs per collector (from ``num_collectors`` for a list).
        num_collectors: collectors (from ``num_env_per_collector`` for a list).

    Keyword Args:
        batched_env: the batched env class (``rl_envs.ParallelEnv``, ``rl_envs.SerialEnv``)
            called as ``batched_env(num_workers, factories)``; required with more than one env
            per collector.
        **kwargs: the collector's keyword arguments: ``policy``, ``frames_per_batch``,
            ``total_frames``, ``max_frames_per_traj`` (TorchRL's ``-1``: no limit),
            ``postproc``, ``device``, ``split_trajs``, ...

    Returns:
        The collector.

    Raises:
        TypeError: ``env_fns`` is neither a factory nor a list of factories.
        ValueError: the counts do not fit the factories, or several envs per collector
            without ``batched_env``.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> collector = sync_sync_collector(CountingEnv, None, 1, 1, frames_per_batch=4,
        ...                                 total_frames=8)
        >>> print(type(collector).__name__, [batch.numel() for batch in collector])
        SyncDataCollector [4, 4]
    """
    return _make_collector(
        "sync_sync_collector", MultiSyncCollector, env_fns, env_kwargs, num_env_per_collector, num_collectors,
        batched_env, kwargs,
    )  # fmt: skip


def sync_async_collector(
    env_fns: EnvFactory | Sequence[EnvFactory],
    env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
    num_env_per_collector: int | None = None,
    num_collectors: int | None = None,
    *,
    batched_env: Callable[..., EnvBase] | None = None,
    **kwargs: Any,
) -> MultiAsyncCollector:
    """Asynchronous collectors, each running its envs synchronously: a
    :class:`MultiAsyncCollector` with one worker process per collector, yielding each worker's
    batch as it comes. The envs are shared out as in :func:`sync_sync_collector`, whose
    arguments these are.

    Returns:
        The collector.

    Raises:
        TypeError: ``env_fns`` is neither a factory nor a list of factories.
        ValueError: the counts do not fit the factories, or several envs per collector
            without ``batched_env``.
    """
    return _make_collector(
        "sync_async_collector", MultiAsyncCollector, env_fns, env_kwargs,
        num_env_per_collector, num_collectors, batched_env, kwargs,
    )  # fmt: skip


def _collector_from_cfg(
    owner: str,
    make_env: EnvFactory,
    actor_model_explore: Callable[..., Any],
    cfg: Any,
    make_env_kwargs: Mapping[str, Any] | None,
    *,
    off_policy: bool,
) -> BaseCollector:
    if not callable(make_env):
        raise TypeError(f"{owner}: make_env must be an env factory, got {type(make_env).__name__}.")
    if make_env_kwargs is not None and not isinstance(make_env_kwargs, Mapping):
        raise TypeError(
            f"{owner}: make_env_kwargs must be a dict or None, got "
            f"{type(make_env_kwargs).__name__}."
        )
    device = _setting(owner, cfg, "collector_device", (str, torch.device, Sequence))
    if isinstance(device, Sequence) and not isinstance(device, str):
        if len(device) != 1:
            raise ValueError(
                f"{owner}: cfg.collector_device must name one device here, got {list(device)!r}."
            )
        device = device[0]
    num_workers = _count(owner, "cfg.num_workers", _setting(owner, cfg, "num_workers", int))
    per_collector = _count(
        owner, "cfg.env_per_collector", _setting(owner, cfg, "env_per_collector", int)
    )
    exploration = _setting(owner, cfg, "exploration_type", str)
    try:
        exploration_type = ExplorationType(exploration)
    except ValueError as err:
        raise ValueError(
            f"{owner}: cfg.exploration_type must be one of "
            f"{[e.value for e in ExplorationType]}, got {exploration!r}."
        ) from err
    kwargs: dict[str, Any] = {
        "policy": actor_model_explore,
        "max_frames_per_traj": _setting(owner, cfg, "max_frames_per_traj", int),
        "frames_per_batch": _setting(owner, cfg, "frames_per_batch", int),
        "total_frames": _setting(owner, cfg, "total_frames", int),
        "device": device,
        "storing_device": device,
        "split_trajs": True,
        "exploration_type": exploration_type,
    }
    helper = sync_sync_collector
    if off_policy:
        if _setting(owner, cfg, "async_collection", bool):
            helper = sync_async_collector
        if _setting(owner, cfg, "multi_step", bool):
            kwargs["postproc"] = MultiStep(
                gamma=_setting(owner, cfg, "gamma", (int, float)),
                n_steps=_setting(owner, cfg, "n_steps_return", int),
            )
        kwargs["init_random_frames"] = _setting(owner, cfg, "init_random_frames", int)
    collector = helper(
        make_env,
        dict(make_env_kwargs or {}),
        num_env_per_collector=1,
        num_collectors=-(num_workers // -per_collector),
        **kwargs,
    )
    collector.set_seed(_setting(owner, cfg, "seed", int))
    return collector


def make_collector_offpolicy(
    make_env: EnvFactory,
    actor_model_explore: Callable[..., Any],
    cfg: Any,
    make_env_kwargs: Mapping[str, Any] | None = None,
) -> BaseCollector:
    """The collector of an off-policy algorithm, from its settings.

    ``ceil(cfg.num_workers / cfg.env_per_collector)`` collectors each run one env of
    ``make_env(**make_env_kwargs)`` (a factory that already batches ``env_per_collector`` envs,
    e.g. ``rl_envs.helpers.parallel_env_constructor``): one :class:`Collector` in this
    process, or a :class:`MultiSyncCollector` (:class:`MultiAsyncCollector` with
    ``cfg.async_collection``) of worker processes. They run ``actor_model_explore`` with
    ``cfg.exploration_type`` on ``cfg.collector_device``, collect ``cfg.frames_per_batch``
    frames per batch up to ``cfg.total_frames``, the first ``cfg.init_random_frames`` with
    random actions, cut episodes at ``cfg.max_frames_per_traj`` steps, split the batches into
    trajectories, and with ``cfg.multi_step`` compute ``cfg.n_steps_return``-step returns with
    ``cfg.gamma`` (:class:`MultiStep`). The collector is seeded with ``cfg.seed``.

    Args:
        make_env: the env factory.
        actor_model_explore: the exploration policy.
        cfg: the settings; missing ones take TorchRL's ``OffPolicyCollectorConfig`` defaults
            (``frames_per_batch=1000``, ``total_frames=50_000_000``, ``num_workers=32``,
            ``env_per_collector=8``, ``seed=42``, ``init_random_frames=50_000``,
            ``n_steps_return=3``, ``max_frames_per_traj=1000``, ``gamma=0.99``).
        make_env_kwargs: keyword arguments of ``make_env``.

    Returns:
        The collector.

    Raises:
        TypeError: a setting of the wrong type (named), or ``make_env`` not callable.
        ValueError: a count below 1, an unknown ``cfg.exploration_type``, or several
            collector devices.
    """
    return _collector_from_cfg(
        "make_collector_offpolicy", make_env, actor_model_explore, cfg, make_env_kwargs,
        off_policy=True,
    )  # fmt: skip


def make_collector_onpolicy(
    make_env: EnvFactory,
    actor_model_explore: Callable[..., Any],
    cfg: Any,
    make_env_kwargs: Mapping[str, Any] | None = None,
) -> BaseCollector:
    """The collector of an on-policy algorithm, from its settings: as
    :func:`make_collector_offpolicy` but always synchronous, with no random warm-up frames and
    no multi-step returns (TorchRL's ``OnPolicyCollectorConfig`` settings).

    Returns:
        The collector.

    Raises:
        TypeError: a setting of the wrong type (named), or ``make_env`` not callable.
        ValueError: a count below 1, an unknown ``cfg.exploration_type``, or several
            collector devices.
    """
    return _collector_from_cfg(
        "make_collector_onpolicy", make_env, actor_model_explore, cfg, make_env_kwargs,
        off_policy=False,
    )  # fmt: skip
