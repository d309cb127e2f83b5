"""Weight updaters: how a collector's policy copies (local, worker processes, Ray actors) get
the trainer's weights. TorchRL 0.14's names and hooks.

A collector calls its updater inside ``update_policy_weights_()``; ``push_weights`` resolves
the weights (given, or fetched with ``_get_server_weights``), maps them
(``_maybe_map_weights``) and hands them to each worker (``_sync_weights_with_worker``),
then runs the post-hooks. Subclass ``WeightUpdaterBase`` and implement
``_sync_weights_with_worker`` (and ``all_worker_ids``/``_get_server_weights`` where they
apply) to ship weights another way.
"""

from __future__ import annotations

import abc
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

__all__ = [
    "WeightUpdaterBase",
    "VanillaWeightUpdater",
    "MultiProcessedWeightUpdater",
    "RayWeightUpdater",
    "RemoteModuleWeightUpdater",
]


def as_weights(where: str, weights: Any) -> TensorDictBase:
    """``weights`` as a TensorDict shaped like ``TensorDict.from_module(policy)``: a module,
    a TensorDict, or a state dict (its dotted keys nested)."""
    if isinstance(weights, nn.Module):
        return TensorDict.from_module(weights).data
    if isinstance(weights, TensorDictBase):
        return weights
    if isinstance(weights, dict):
        return TensorDict(dict(weights), batch_size=[]).unflatten_keys(".")
    raise TypeError(
        f"{where}: expected weights as an nn.Module, a TensorDict (TensorDict.from_module("
        f"policy)) or a state dict, got {type(weights).__name__}."
    )


class WeightUpdaterBase(abc.ABC):
    """Sends a policy's weights to where a collector runs it.

    ``push_weights(weights=None, worker_ids=None)`` (also ``__call__``) is what a collector's
    ``update_policy_weights_`` calls:

    1. ``weights`` (a module, a TensorDict or a state dict) is turned into a TensorDict, or,
       when ``None``, fetched with ``_get_server_weights()``;
    2. ``_maybe_map_weights`` may transform it (identity by default);
    3. each worker of ``worker_ids`` (default ``all_worker_ids()``, ``None`` meaning one
       unnamed worker) gets it through ``_sync_weights_with_worker(worker_id=...,
       server_weights=...)`` unless ``_skip_update(worker_id)`` says to skip it;
    4. the post-hooks (``register_post_hook``) run.

    Subclasses implement ``_sync_weights_with_worker`` (or override ``_push_weights``, steps
    1 to 3, to replace the scheme). A collector registers itself with
    ``register_collector`` (kept as a weak reference: ``collector`` is ``None`` once it is
    gone).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_collectors import WeightUpdaterBase
        >>> class Recorder(WeightUpdaterBase):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.seen = []
        ...     def _sync_weights_with_worker(self, *, worker_id=None, server_weights):
        ...         self.seen.append((worker_id, float(server_weights["w"])))
        ...     def all_worker_ids(self):
        ...         return [0, 1]
        >>> updater = Recorder()
        >>> updater.push_weights(TensorDict({"w": torch.tensor(2.0)}))
        >>> updater.seen
        [(0, 2.0), (1, 2.0)]
    """

    def __init__(self) -> None:
        self._collector_ref: weakref.ref | None = None
        self._post_hooks: list[Callable[[], Any]] = []

    # ------------------------------------------------------------------ registration
    def register_collector(self, collector: Any) -> None:
        """Tells the updater which collector it serves (a weak reference)."""
        self._collector_ref = weakref.ref(collector)

    @property
    def collector(self) -> Any:
        """The registered collector, or ``None`` (none registered, or it was collected)."""
        return None if self._collector_ref is None else self._collector_ref()

    @property
    def collectors(self) -> list[Any] | None:
        """The registered collector in a list (``None`` when there is none)."""
        collector = self.collector
        return None if collector is None else [collector]

    def register_post_hook(self, hook: Callable[[], Any]) -> None:
        """Runs ``hook()`` after every ``push_weights``."""
        if not callable(hook):
            raise TypeError(
                f"{type(self).__name__}.register_post_hook: expected a callable, got "
                f"{type(hook).__name__}."
            )
        self._post_hooks.append(hook)

    def init(self, *args: Any, **kwargs: Any) -> None:  # noqa: B027 (optional hook)
        """Set-up a subclass may need once its collector exists; nothing by default."""

    # ------------------------------------------------------------------ the steps
    def _get_server_weights(self) -> Any:
        """The weights to send when ``push_weights`` gets none."""
        raise RuntimeError(
            f"{type(self).__name__}.push_weights: no weights were passed and this updater "
            f"has no source to fetch them from; pass them explicitly "
            f"(collector.update_policy_weights_(weights))."
        )

    def _maybe_map_weights(self, server_weights: Any) -> Any:
        """Transforms the weights before they are sent (identity by default)."""
        return server_weights

    @abc.abstractmethod
    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any) -> None:
        """Gives ``server_weights`` to worker ``worker_id``."""

    def all_worker_ids(self) -> list[Any] | None:
        """The workers a push goes to; ``None``: one worker without an id."""
        return None

    def _skip_update(self, worker_id: Any) -> bool:
        """``True`` to leave worker ``worker_id`` out of this push."""
        return False

    def _resolve(self, weights: Any) -> Any:
        if weights is None:
            return self._get_server_weights()
        return as_weights(f"{type(self).__name__}.push_weights", weights)

    def push_weights(
        self,
        weights: Any = None,
        *,
        worker_ids: Any = None,
    ) -> None:
        """Sends ``weights`` (or the server's) to ``worker_ids`` (or every worker).

        Args:
            weights: an ``nn.Module`` (its weights), a TensorDict shaped like
                ``TensorDict.from_module(policy)``, a state dict, or ``None`` to fetch them
                with ``_get_server_weights``.
            worker_ids: one id or a list of them; ``None`` for ``all_worker_ids()``.
        """
        self._push_weights(weights, worker_ids=worker_ids)
        for hook in self._post_hooks:
            hook()

    def _push_weights(self, weights: Any = None, *, worker_ids: Any = None) -> None:
        """Steps 1 to 3 of ``push_weights`` (everything but the post-hooks); override it to
        replace the whole scheme."""
        server_weights = self._maybe_map_weights(self._resolve(weights))
        if worker_ids is None:
            ids = self.all_worker_ids()
            ids = [None] if ids is None else list(ids)
        elif isinstance(worker_ids, Sequence) and not isinstance(worker_ids, str):
            ids = list(worker_ids)
        else:
            ids = [worker_ids]
        for worker_id in ids:
            if not self._skip_update(worker_id):
                self._sync_weights_with_worker(worker_id=worker_id, server_weights=server_weights)

    def __call__(self, weights: Any = None, worker_ids: Any = None) -> None:
        self.push_weights(weights, worker_ids=worker_ids)


class VanillaWeightUpdater(WeightUpdaterBase):
    """Copies weights in place into one local policy (``policy_weights``).

    The default of ``SyncDataCollector`` when its policy has weights: ``policy_weights`` is
    ``TensorDict.from_module(collector.policy)`` and ``weight_getter`` reads the policy passed
    at construction when the collector runs a copy of it on another device (``None`` when the
    collector runs that policy itself: a push without weights then has nothing to copy).

    Keyword Args:
        weight_getter: a callable returning the weights to copy when ``push_weights`` gets
            none; ``None`` makes such a push a no-op.
        policy_weights: the TensorDict of the policy's parameters and buffers, updated in
            place (``TensorDict.from_module(policy)``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_collectors import VanillaWeightUpdater
        >>> policy, trained = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
        >>> updater = VanillaWeightUpdater(policy_weights=TensorDict.from_module(policy))
        >>> updater.push_weights(trained)
        >>> bool(policy.weight == trained.weight)
        True
    """

    def __init__(
        self,
        *,
        weight_getter: Callable[[], Any] | None = None,
        policy_weights: TensorDictBase,
    ) -> None:
        super().__init__()
        if not isinstance(policy_weights, TensorDictBase):
            raise TypeError(
                f"VanillaWeightUpdater: expected policy_weights as a TensorDict "
                f"(TensorDict.from_module(policy)), got {type(policy_weights).__name__}."
            )
        self.weight_getter = weight_getter
        self.policy_weights = policy_weights

    @classmethod
    def from_policy(cls, policy: Any) -> VanillaWeightUpdater | None:
        """An updater of ``policy``'s own weights, or ``None`` when it has none."""
        if not isinstance(policy, nn.Module) or not any(
            True for _ in (*policy.parameters(), *policy.buffers())
        ):
            return None
        return cls(policy_weights=TensorDict.from_module(policy))

    def _resolve(self, weights: Any) -> Any:
        if weights is None and self.weight_getter is None:
            return None
        return super()._resolve(weights)

    def _get_server_weights(self) -> Any:
        return as_weights("VanillaWeightUpdater.push_weights", self.weight_getter())

    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any) -> None:
        if server_weights is None:
            return
        target = self.policy_weights
        with torch.no_grad():
            target.data.update_(_onto(server_weights, _device_of(target)))


class MultiProcessedWeightUpdater(WeightUpdaterBase):
    """Publishes weights to worker processes through shared memory.

    ``policy_weights`` maps each worker id (TorchRL keys them by device) to the shared copy
    those workers read. A value with a ``publish(weights)`` method is published through it:
    the multi-process collectors' copy is a sequence-locked one (the version counter is odd
    while the parent writes; a worker whose read overlapped a write reads again), so a worker
    killed in the middle of a read never blocks the next push. Any other value must be a
    TensorDict in shared memory and is updated in place.

    The default of ``MultiSyncDataCollector`` and ``MultiaSyncDataCollector``; their
    ``get_server_weights`` reads the policy passed at construction.

    Keyword Args:
        get_server_weights: a callable returning the weights to send when ``push_weights``
            gets none (``None``: weights must be passed).
        policy_weights: ``{worker_id: shared weights}``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_collectors import MultiProcessedWeightUpdater
        >>> policy = torch.nn.Linear(1, 1)
        >>> shared = TensorDict.from_module(policy).data.clone().share_memory_()
        >>> updater = MultiProcessedWeightUpdater(
        ...     get_server_weights=lambda: TensorDict.from_module(policy).data,
        ...     policy_weights={torch.device("cpu"): shared},
        ... )
        >>> with torch.no_grad():
        ...     _ = policy.weight.fill_(3.0)
        >>> updater.push_weights()
        >>> float(shared["weight"])
        3.0
    """

    def __init__(
        self,
        *,
        get_server_weights: Callable[[], Any] | None,
        policy_weights: dict[Any, Any],
    ) -> None:
        super().__init__()
        if not isinstance(policy_weights, dict) or not policy_weights:
            raise TypeError(
                f"MultiProcessedWeightUpdater: expected policy_weights as a non-empty dict "
                f"{{worker id: shared weights}}, got {policy_weights!r}."
            )
        self.get_server_weights = get_server_weights
        self.policy_weights = policy_weights

    def all_worker_ids(self) -> list[Any]:
        return list(self.policy_weights)

    def _get_server_weights(self) -> Any:
        if self.get_server_weights is None:
            return super()._get_server_weights()
        return as_weights("MultiProcessedWeightUpdater.push_weights", self.get_server_weights())

    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any) -> None:
        if worker_id not in self.policy_weights:
            raise KeyError(
                f"MultiProcessedWeightUpdater: unknown worker id {worker_id!r}; the workers "
                f"are {list(self.policy_weights)}."
            )
        target = self.policy_weights[worker_id]
        if callable(getattr(target, "publish", None)):
            target.publish(server_weights)
        else:
            with torch.no_grad():
                target.update_(_onto(server_weights, _device_of(target)))


class RayWeightUpdater(WeightUpdaterBase):
    """Sends weights to collectors running as Ray actors: one ``ray.put`` per push (the
    object store holds one copy, every actor reads it), then one call per actor, waited for.

    Each remote collector must have an ``update_policy_weights_(weights, version)`` method
    (``RayCollector``'s actors do). ``version`` counts the pushes and is what the actors tag
    their frames with (``("collector", "policy_version")``).

    Args:
        policy_weights: the weights to send when ``push_weights`` gets none
            (``TensorDict.from_module(policy)``: it follows the policy's updates).
        remote_collectors: the actor handles.
        max_interval: ``0`` sends every push to every actor; ``k > 0`` sends an actor only
            every ``(k + 1)``-th push (the others are skipped for it), which bounds how many
            pushes an actor may lag behind.
    """

    def __init__(
        self, policy_weights: TensorDictBase, remote_collectors: list, max_interval: int = 0
    ) -> None:
        super().__init__()
        if not isinstance(max_interval, int) or isinstance(max_interval, bool) or max_interval < 0:
            raise ValueError(
                f"RayWeightUpdater: expected max_interval as an int >= 0, got {max_interval!r}."
            )
        self.policy_weights = policy_weights
        self.remote_collectors = list(remote_collectors)
        self.max_interval = max_interval
        self.version = 0
        self._skipped = [0] * len(self.remote_collectors)
        self._pending: list[Any] = []

    def all_worker_ids(self) -> list[int]:
        return list(range(len(self.remote_collectors)))

    def _get_server_weights(self) -> Any:
        return self.policy_weights

    def _maybe_map_weights(self, server_weights: Any) -> Any:
        import ray

        # One copy in the object store, read by every actor.
        return ray.put(server_weights.data.cpu())

    def _skip_update(self, worker_id: int) -> bool:
        if self.max_interval and self._skipped[worker_id] < self.max_interval:
            self._skipped[worker_id] += 1
            return True
        self._skipped[worker_id] = 0
        return False

    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any) -> None:
        actor = self.remote_collectors[worker_id]
        self._pending.append(actor.update_policy_weights_.remote(server_weights, self.version))

    def push_weights(self, weights: Any = None, *, worker_ids: Any = None) -> None:
        import ray

        self.version += 1
        self._pending = []
        try:
            super().push_weights(weights, worker_ids=worker_ids)
        finally:
            calls, self._pending = self._pending, []
            ray.get(calls)


class RemoteModuleWeightUpdater(WeightUpdaterBase):
    """For a collector whose policy cannot fetch weights itself (it lives where the trainer
    is not): weights must be passed to ``update_policy_weights_(weights)`` and are copied in
    place into the registered collector's ``policy``. A push without weights raises.

    Examples:
        >>> import torch
        >>> from rl_core.testing import CountingEnv
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_collectors import RemoteModuleWeightUpdater, SyncDataCollector
        >>> policy = TensorDictModule(torch.nn.Linear(1, 1), ["observation"], ["action"])
        >>> collector = SyncDataCollector(CountingEnv(), policy, frames_per_batch=2,
        ...     weight_updater=RemoteModuleWeightUpdater())
        >>> weights = TensorDict.from_module(policy).data.clone().zero_()
        >>> collector.update_policy_weights_(weights)
        >>> float(policy.module.weight.detach().abs().sum())
        0.0
    """

    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any) -> None:
        collector = self.collector
        policy = getattr(collector, "policy", None)
        if not isinstance(policy, nn.Module):
            raise RuntimeError(
                f"RemoteModuleWeightUpdater: expected a registered collector with an nn.Module "
                f"policy, got {'no collector' if collector is None else type(policy).__name__}."
            )
        with torch.no_grad():
            TensorDict.from_module(policy).update_(_onto(server_weights, _device_of_module(policy)))


def _onto(weights: TensorDictBase, device: torch.device | None) -> TensorDictBase:
    return weights if device is None else weights.to(device)


def _device_of(weights: TensorDictBase) -> torch.device | None:
    for value in weights.values(True, True):
        return value.device
    return None


def _device_of_module(module: nn.Module) -> torch.device | None:
    for tensor in (*module.parameters(), *module.buffers()):
        return tensor.device
    return None
