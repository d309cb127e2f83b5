"""RayCollector: collectors as Ray actors, weights broadcast through Ray's object store."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_collectors._common import (
    check_positive_int,
    check_schemes,
    check_total_frames,
    load_weights,
)
from rl_collectors.distributed import _wire
from rl_collectors.sync import SyncDataCollector
from rl_collectors.utils import TRAJ_IDS
from rl_collectors.weight_sync import WeightSyncScheme
from rl_collectors.weight_update import RayWeightUpdater, WeightUpdaterBase
from rl_core import EnvBase

POLICY_VERSION = ("collector", "policy_version")


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise ImportError('RayCollector needs ray: pip install "rl-collectors[ray]"') from err
    return ray


def label(batch: TensorDictBase, version: int, index: int, num_collectors: int) -> TensorDictBase:
    """Writes the policy version of every frame and makes trajectory ids unique across
    actors (``id * num_collectors + index``)."""
    batch.set(POLICY_VERSION, torch.full(batch.batch_size, version, dtype=torch.int64))
    ids = batch.get(TRAJ_IDS, None)
    if ids is not None:
        batch.set(TRAJ_IDS, ids * num_collectors + index)
    return batch


class _CollectorActor:
    """Runs in a Ray actor: one collector, its batches and its weight updates. With a
    replay buffer, the actor labels each batch and extends the buffer itself (the batch never
    travels through the driver) and answers ``None``."""

    def __init__(
        self,
        collector_class: type,
        create_env_fn: Any,
        policy: Any,
        kwargs: dict,
        replay_buffer: Any = None,
        index: int = 0,
        num_collectors: int = 1,
        weight_sync_schemes: dict[str, WeightSyncScheme] | None = None,
    ) -> None:
        torch.set_num_threads(1)
        self.collector = collector_class(create_env_fn, policy, **kwargs)
        self.version = 0
        self.replay_buffer = replay_buffer
        self.index, self.num_collectors = index, num_collectors
        self.schemes = weight_sync_schemes or {}
        for model_id, scheme in self.schemes.items():
            scheme.init_on_receiver(model_id=model_id, context=self.collector, worker_idx=index)

    def next_batch(self) -> tuple[TensorDictBase | None, int]:
        batch = self.collector.next()
        if self.replay_buffer is None:
            return batch, self.version
        self.replay_buffer.extend(label(batch, self.version, self.index, self.num_collectors))
        return None, self.version

    def update_policy_weights_(self, weights: TensorDictBase, version: int) -> int:
        self.collector.update_policy_weights_(weights)
        self.version = version
        return version

    def receive_weights(self, version: int, timeout: float) -> int:
        """Applies what the weight-sync schemes sent (waiting up to ``timeout`` s)."""
        for model_id, scheme in self.schemes.items():
            if scheme.receive(timeout=timeout) is None:
                raise RuntimeError(
                    f"RayCollector actor {self.index}: no weights for {model_id!r} arrived "
                    f"within {timeout} s of the update."
                )
        self.version = version
        return version

    def set_seed(self, seed: int, static_seed: bool) -> int:
        return self.collector.set_seed(seed, static_seed=static_seed)

    def shutdown(self) -> None:
        self.collector.shutdown()


class RayCollector:
    """Runs ``num_collectors`` collectors as Ray actors and yields their batches.

    Each actor builds ``collector_class(create_env_fn, policy, **collector_kwargs)`` and
    produces batches with its ``next()``. With ``sync=True`` every iteration asks each actor
    for one batch and yields them stacked along a new first dim (``frames_per_batch`` is
    split among the actors); with ``sync=False`` actors collect continuously and each batch
    is yielded as it arrives (``frames_per_batch`` per batch). ``update_policy_weights_()``
    puts the policy's weights in Ray's object store once and every actor loads them; each
    frame carries the version of the weights that produced it in ``("collector",
    "policy_version")``. Ray is started with ``ray.init(**ray_init_config)`` unless it is
    already running in this process (pass ``{"address": ...}`` to join a cluster); errors in
    an actor surface as Ray's exceptions with the remote traceback.

    Args:
        create_env_fn: an env factory, or a list of them (one per collector).
        policy: as in ``SyncDataCollector`` (sent to each actor).
        frames_per_batch: frames per yielded batch (see ``sync``).
        total_frames: stop after this many frames; ``-1`` never.
        num_collectors: the number of actors; defaults to the length of the factory list, or 1.
        collector_class: the collector each actor runs. Defaults to ``SyncDataCollector``.
        collector_kwargs: keyword arguments of the collector (a dict, or one per collector).
        remote_configs: Ray actor options (``num_cpus``, ``memory``...), a dict or one per
            collector. Defaults to ``{"num_cpus": 1}``.
        sync: gather one batch from every actor per iteration, or yield as they come.
        ray_init_config: keyword arguments of ``ray.init`` when Ray is not running yet.
        replay_buffer: anything with ``extend(td)`` that Ray can send to the actors and that
            stays one buffer when it is (a ``RayReplayBuffer`` handle): each actor extends it
            with its labelled batches itself, so batches never pass through the driver, and
            the iterator yields ``None`` per batch. A plain local buffer would be copied into
            each actor: use a buffer hosted in Ray.
        weight_updater: what ``update_policy_weights_`` calls; defaults to a
            ``RayWeightUpdater`` over the actors (one ``ray.put`` per update).
        weight_sync_schemes: ``{"policy": RayWeightSyncScheme()}`` instead of an updater:
            each update is sent through the scheme and every target actor applies it before
            ``update_policy_weights_`` returns.

    Raises:
        ImportError: ray is not installed.
        ValueError: bad counts, or lists whose length is not ``num_collectors``.
    """

    def __init__(
        self,
        create_env_fn: Callable[[], EnvBase] | Sequence[Callable[[], EnvBase]],
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        frames_per_batch: int,
        total_frames: int = -1,
        num_collectors: int | None = None,
        collector_class: type = SyncDataCollector,
        collector_kwargs: dict[str, Any] | Sequence[dict[str, Any]] | None = None,
        remote_configs: dict[str, Any] | Sequence[dict[str, Any]] | None = None,
        sync: bool = True,
        ray_init_config: dict[str, Any] | None = None,
        replay_buffer: Any = None,
        weight_updater: WeightUpdaterBase | None = None,
        weight_sync_schemes: dict[str, WeightSyncScheme] | None = None,
    ) -> None:
        where = type(self).__name__
        self._actors: list[Any] = []
        self._closed = True
        factories = list(create_env_fn) if isinstance(create_env_fn, Sequence) else None
        n = num_collectors if num_collectors is not None else len(factories or [None])
        check_positive_int(where, "num_collectors", n)
        factories = factories or [create_env_fn] * n
        kwargs_list = self._per_collector(where, "collector_kwargs", collector_kwargs, n, {})
        configs = self._per_collector(where, "remote_configs", remote_configs, n, {"num_cpus": 1})
        if len(factories) != n:
            raise ValueError(
                f"{where}: expected {n} env factories (num_collectors), got {len(factories)}."
            )
        check_positive_int(where, "frames_per_batch", frames_per_batch)
        if replay_buffer is not None and not callable(getattr(replay_buffer, "extend", None)):
            raise TypeError(
                f"{where}: expected replay_buffer to have an extend(td) method, got "
                f"{type(replay_buffer).__name__}."
            )
        self.total_frames = check_total_frames(where, total_frames)
        if sync and frames_per_batch % n:
            raise ValueError(
                f"{where}: with sync=True, expected frames_per_batch as a multiple of the {n} "
                f"collectors, got {frames_per_batch}."
            )
        ray = _import_ray()
        self._ray = ray
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(**(ray_init_config or {}))
        self.num_collectors = n
        self.frames_per_batch = frames_per_batch
        self.sync = sync
        self.policy = policy
        self.replay_buffer = replay_buffer
        self.weight_sync_schemes = check_schemes(where, weight_sync_schemes, weight_updater)
        for model_id, scheme in self.weight_sync_schemes.items():
            scheme.init_on_sender(model_id=model_id, context=self, num_workers=n)
        self._scheme_version = 0
        self._frames = 0
        self._iterator: Iterator | None = None
        worker_frames = frames_per_batch // n if sync else frames_per_batch
        remote = ray.remote(_CollectorActor)
        for i, (factory, kwargs, config) in enumerate(zip(factories, kwargs_list, configs)):
            kwargs = {**kwargs, "frames_per_batch": worker_frames, "total_frames": -1}
            actor = remote.options(**config).remote(
                collector_class,
                factory,
                policy,
                kwargs,
                replay_buffer,
                i,
                n,
                self.weight_sync_schemes,
            )
            self._actors.append(actor)
        self._closed = False
        if (
            weight_updater is None
            and isinstance(policy, nn.Module)
            and not self.weight_sync_schemes
        ):
            weight_updater = RayWeightUpdater(TensorDict.from_module(policy), self._actors)
        self.weight_updater = weight_updater
        if weight_updater is not None:
            weight_updater.register_collector(self)

    @property
    def remote_collectors(self) -> list[Any]:
        """The Ray actor handles, one per collector (for a custom ``weight_updater``)."""
        return list(self._actors)

    @property
    def policy_version(self) -> int:
        """How many times weights were pushed (the version the actors tag frames with)."""
        if self.weight_sync_schemes:
            return self._scheme_version
        return getattr(self.weight_updater, "version", 0)

    @staticmethod
    def _per_collector(where: str, name: str, value: Any, n: int, default: dict) -> list[dict]:
        if value is None:
            return [dict(default) for _ in range(n)]
        if isinstance(value, dict):
            return [dict(value) for _ in range(n)]
        values = list(value)
        if len(values) != n:
            raise ValueError(
                f"{where}: expected {name} as a dict or a list of {n} dicts (num_collectors), "
                f"got a list of {len(values)}."
            )
        return values

    def _label(self, batch: TensorDictBase | None, version: int, index: int) -> Any:
        if batch is None:  # the actor wrote it into the replay buffer
            return None
        return label(batch, version, index, self.num_collectors)

    def _wanted(self, in_flight: int) -> bool:
        frames = self._frames + in_flight * self.frames_per_batch
        return self.total_frames < 0 or frames < self.total_frames

    def __iter__(self) -> Iterator[TensorDictBase | None]:
        ray = self._ray
        if self.sync:
            while self._wanted(0):
                self._check_open("__iter__")
                calls = [actor.next_batch.remote() for actor in self._actors]
                results = [self._get(call, i) for i, call in enumerate(calls)]
                parts = [self._label(b, v, i) for i, (b, v) in enumerate(results)]
                self._frames += self.frames_per_batch
                yield None if self.replay_buffer is not None else torch.stack(parts, 0)
            return
        pending = {}
        for i, actor in enumerate(self._actors):
            if self._wanted(len(pending)):
                pending[actor.next_batch.remote()] = i
        while pending:
            self._check_open("__iter__")
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            i = pending.pop(ref)
            batch, version = self._get(ref, i)
            self._frames += self.frames_per_batch
            if self._wanted(len(pending)):
                pending[self._actors[i].next_batch.remote()] = i
            yield self._label(batch, version, i)

    def next(self) -> TensorDictBase | None:
        """The next batch of the collector's own iterator (``StopIteration`` at the end)."""
        self._check_open("next")
        if self._iterator is None:
            self._iterator = iter(self)
        return next(self._iterator)

    def _get(self, ref: Any, i: int) -> Any:
        """The result of actor ``i``'s call; an actor that died raises naming it."""
        ray = self._ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayActorError as err:
            self.shutdown()
            raise RuntimeError(
                f"{type(self).__name__}: collector actor {i} died ({type(err).__name__}); "
                f"the other actors were stopped."
            ) from err

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__}.{what}: the collector was shut down.")

    def update_policy_weights_(self, weights: Any = None, *, worker_ids: Any = None) -> None:
        """Pushes the policy's weights to the actors through ``weight_updater`` (by default
        one ``ray.put``, then every actor loads them; this waits until each has).

        Args:
            weights: ``None`` sends the weights of the policy passed at construction; a
                TensorDict or state dict is loaded into that policy first.
            worker_ids: actor indices (default: all).
        """
        self._check_open("update_policy_weights_")
        where = f"{type(self).__name__}.update_policy_weights_"
        if self.weight_sync_schemes:
            if weights is not None and isinstance(self.policy, nn.Module):
                load_weights(where, self.policy, weights)
            ids = range(self.num_collectors) if worker_ids is None else _wire.worker_ids(worker_ids)
            for scheme in self.weight_sync_schemes.values():
                scheme.send(worker_ids=list(ids))
            self._scheme_version += 1
            calls = {
                i: self._actors[i].receive_weights.remote(self._scheme_version, 60.0) for i in ids
            }
            for i, call in calls.items():
                self._get(call, i)
            return
        if self.weight_updater is None:
            raise RuntimeError(f"{where}: the policy has no weights to send.")
        if weights is not None and isinstance(self.policy, nn.Module):
            load_weights(where, self.policy, weights)
        self.weight_updater.push_weights(weights, worker_ids=worker_ids)

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds actor ``i``'s collector with the seed the previous one returned."""
        for actor in self._actors:
            next_seed = self._ray.get(actor.set_seed.remote(seed, static_seed))
            seed = seed if static_seed else next_seed
        return seed

    def shutdown(self) -> None:
        """Stops the actors, and Ray itself if this collector started it; idempotent."""
        if self._closed:
            return
        self._closed = True
        ray = self._ray
        # An actor that died already has nothing left to close.
        with contextlib.suppress(Exception):
            ray.get([actor.shutdown.remote() for actor in self._actors], timeout=30)
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        for scheme in self.weight_sync_schemes.values():
            scheme.shutdown()
        if self._owns_ray:
            ray.shutdown()


__all__ = ["RayCollector"]
