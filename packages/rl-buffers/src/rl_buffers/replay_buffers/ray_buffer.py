"""RayReplayBuffer: one replay buffer in a Ray actor, written and sampled from anywhere."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from torch import Tensor

from rl_buffers.replay_buffers.replay_buffer import ReplayBuffer
from rl_buffers.samplers.sampler import Sampler
from rl_buffers.storages.storage import Storage
from rl_buffers.writers.writer import Writer
from rl_core.transforms import Transform

__all__ = ["RayReplayBuffer"]

DEFAULT_REMOTE_CONFIG: dict[str, Any] = {"num_cpus": 1}
_PARTS = {"storage": Storage, "sampler": Sampler, "writer": Writer, "transform": Transform}


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise ImportError('RayReplayBuffer needs ray: pip install "rl-buffers[ray]"') from err
    return ray


class _BufferActor:
    """Runs in the Ray actor: builds the buffer there and forwards each call to it."""

    def __init__(
        self, replay_buffer_cls: type, args: tuple, kwargs: dict, transform_factory: Any
    ) -> None:
        kwargs = dict(kwargs)
        for name, kind in _PARTS.items():
            part = kwargs.get(name)
            if part is not None and not isinstance(part, kind) and callable(part):
                kwargs[name] = part()  # a constructor: built here, never pickled
        if transform_factory is not None:
            kwargs["transform"] = transform_factory()
        self.buffer = replay_buffer_cls(*args, **kwargs)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.buffer, method)(*args, **kwargs)

    def length(self) -> int:
        return len(self.buffer)

    def getitem(self, index: Any) -> Any:
        return self.buffer[index]

    def iter_step(self) -> tuple[Any, bool]:
        batch = self.buffer.sample()
        sampler = self.buffer.sampler
        return batch, sampler.supports_epochs and sampler.ran_out

    def pid(self) -> int:
        return os.getpid()


class RayReplayBuffer(ReplayBuffer):
    """A replay buffer that lives in a Ray actor; collectors and the learner share it.

    The buffer (``replay_buffer_cls(*args, **kwargs)``) is built inside one Ray actor; this
    object is a handle to it. ``extend``, ``add``, ``sample``, ``update_priority``,
    ``empty``, ``state_dict``/``load_state_dict``, ``dumps``/``loads`` (paths on the actor's
    node), ``len()`` and ``buffer[index]`` run in the actor, one call at a time, and return
    what the local buffer would (errors are raised here as Ray's task errors, which are also
    instances of the original exception type). The handle pickles: pass it to Ray actors or
    tasks (remote collectors) and their ``extend`` calls write into the same buffer, while the
    learner samples from it; :meth:`extend_async` returns at once with a Ray object ref.

    ``storage``, ``sampler``, ``writer`` and ``transform`` may be given as instances (they are
    pickled to the actor) or, as TorchRL advises, as constructors (``partial(
    LazyTensorStorage, 100_000)``), called in the actor; ``transform_factory`` builds the
    transform there. Ray is started with ``ray.init(**ray_init_config)`` unless it already
    runs in this process (give ``{"address": "auto"}`` or ``{"address": "ray://head:10001"}``
    to join a cluster, or call ``ray.init`` yourself first).

    Args:
        *args: positional arguments of ``replay_buffer_cls`` (``HERReplayBuffer``'s
            ``reward_fn``).
        replay_buffer_cls: the buffer class built in the actor. Defaults to
            :class:`ReplayBuffer`; any buffer of this package works
            (``TensorDictReplayBuffer``, ``TensorDictPrioritizedReplayBuffer``, ...).
        ray_init_config: keyword arguments of ``ray.init`` when Ray is not running yet.
        remote_config: Ray actor options (``num_cpus``, ``num_gpus``, ``memory``,
            ``resources``, ``name``...). Defaults to ``{"num_cpus": 1}``.
        delayed_init: build the actor at the first call instead of now.
        transform_factory: a callable returning the transform, called in the actor.
        **kwargs: keyword arguments of ``replay_buffer_cls`` (``storage=``, ``sampler=``,
            ``writer=``, ``batch_size=``, ...).

    Raises:
        ImportError: ray is not installed.
        TypeError: ``replay_buffer_cls`` is not a :class:`ReplayBuffer` subclass.

    Example (not run as a doctest: it starts Ray)::

        from functools import partial

        import ray
        import torch
        from tensordict import TensorDict
        from rl_buffers import LazyTensorStorage, RayReplayBuffer, TensorDictReplayBuffer

        buffer = RayReplayBuffer(
            replay_buffer_cls=TensorDictReplayBuffer,
            storage=partial(LazyTensorStorage, 100_000),
            batch_size=256,
            remote_config={"num_cpus": 1},
        )

        @ray.remote
        def collect(buffer, seed):  # a remote writer: the handle was pickled to it
            torch.manual_seed(seed)
            for _ in range(10):
                buffer.extend(TensorDict({"obs": torch.randn(100, 3)}, batch_size=[100]))

        ray.get([collect.remote(buffer, seed) for seed in range(2)])
        batch = buffer.sample()  # the learner: len(buffer) == 2000
        buffer.shutdown()
    """

    def __init__(
        self,
        *args: Any,
        replay_buffer_cls: type[ReplayBuffer] = ReplayBuffer,
        ray_init_config: dict[str, Any] | None = None,
        remote_config: dict[str, Any] | None = None,
        delayed_init: bool = False,
        transform_factory: Callable[[], Transform] | None = None,
        **kwargs: Any,
    ) -> None:
        # (ReplayBuffer.__init__ is not called: the buffer's state lives in the actor.)
        if not (
            isinstance(replay_buffer_cls, type) and issubclass(replay_buffer_cls, ReplayBuffer)
        ):
            raise TypeError(
                f"RayReplayBuffer: expected replay_buffer_cls to be a ReplayBuffer subclass, "
                f"got {replay_buffer_cls!r}."
            )
        if issubclass(replay_buffer_cls, RayReplayBuffer):
            raise TypeError("RayReplayBuffer: replay_buffer_cls cannot be RayReplayBuffer itself.")
        if transform_factory is not None and not callable(transform_factory):
            raise TypeError(
                f"RayReplayBuffer: expected transform_factory to be callable, got "
                f"{type(transform_factory).__name__}."
            )
        ray = _import_ray()
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(**(ray_init_config or {}))
        self._spec = (replay_buffer_cls, args, kwargs, transform_factory)
        self._remote_config = dict(
            DEFAULT_REMOTE_CONFIG if remote_config is None else remote_config
        )
        self._batch_size = kwargs.get("batch_size")
        self._actor: Any = None
        if not delayed_init:
            self._start()

    # ---------------------------------------------------------------- the actor
    def _start(self) -> Any:
        if self._actor is None:
            ray = _import_ray()
            remote = ray.remote(_BufferActor).options(**self._remote_config)
            self._actor = remote.remote(*self._spec)
            ray.get(self._actor.length.remote())  # build errors surface here, not later
        return self._actor

    @property
    def actor(self) -> Any:
        """The Ray actor handle holding the buffer (started if ``delayed_init`` left it off)."""
        return self._start()

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _import_ray().get(self._start().call.remote(method, *args, **kwargs))

    @property
    def storage(self) -> Storage:
        """A copy of the remote storage (changes to it do not reach the actor)."""
        return _import_ray().get(self._start().call.remote("__getattribute__", "storage"))

    @property
    def sampler(self) -> Sampler:
        """A copy of the remote sampler."""
        return _import_ray().get(self._start().call.remote("__getattribute__", "sampler"))

    @property
    def writer(self) -> Writer:
        """A copy of the remote writer."""
        return _import_ray().get(self._start().call.remote("__getattribute__", "writer"))

    @property
    def transform(self) -> Any:
        """A copy of the remote transforms."""
        return _import_ray().get(self._start().call.remote("__getattribute__", "transform"))

    # ---------------------------------------------------------------- calls
    def __len__(self) -> int:
        return _import_ray().get(self._start().length.remote())

    def __getitem__(self, index: Any) -> Any:
        return _import_ray().get(self._start().getitem.remote(index))

    def add(self, data: Any) -> int:
        return self._call("add", data)

    def extend(self, data: Any) -> Tensor:
        """Writes a batch in the actor and waits; returns the items' indices."""
        return self._call("extend", data)

    def extend_async(self, data: Any) -> Any:
        """Sends a batch to the actor without waiting; returns the Ray ref of its indices.

        Writes sent by one caller are applied in the order they were sent.
        """
        return self._start().call.remote("extend", data)

    def sample(self, batch_size: int | None = None, return_info: bool = False) -> Any:
        return self._call("sample", batch_size, return_info)

    def update_priority(self, index: Any, priority: Tensor | float) -> None:
        self._call("update_priority", index, priority)

    def update_priority_async(self, index: Any, priority: Any) -> Any:
        """Sends a priority update to the actor without waiting; returns its Ray ref.

        The actor applies the calls of one handle in the order they were sent, so a later
        ``sample`` from this handle sees the update.
        """
        return self._start().call.remote("update_priority", index, priority)

    def wait_priorities(self) -> None:
        """Nothing to wait for here: see :meth:`update_priority_async`."""

    def update_tensordict_priority(self, data: Any) -> None:
        """As ``TensorDictReplayBuffer.update_tensordict_priority``, in the actor."""
        self._call("update_tensordict_priority", data)

    def empty(self) -> None:
        self._call("empty")

    def __iter__(self) -> Iterator[Any]:
        """Batches of ``batch_size`` until the remote sampler's epoch ends (or forever)."""
        if self._batch_size is None:
            raise ValueError("RayReplayBuffer: iterating needs a batch_size at construction.")
        ray = _import_ray()
        while True:
            batch, ran_out = ray.get(self._start().iter_step.remote())
            yield batch
            if ran_out:
                return

    def append_transform(self, transform: Transform) -> RayReplayBuffer:
        self._call("append_transform", transform)
        return self

    def insert_transform(self, index: int, transform: Transform) -> RayReplayBuffer:
        self._call("insert_transform", index, transform)
        return self

    def set_rng(self, generator: Any) -> None:
        self._call("set_rng", generator)

    def state_dict(self) -> dict[str, Any]:
        return self._call("state_dict")

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._call("load_state_dict", state_dict)

    def dumps(self, path: str | Path) -> None:
        """Checkpoints the buffer under ``path`` on the actor's node."""
        self._call("dumps", str(path))

    def loads(self, path: str | Path) -> None:
        """Restores a checkpoint from ``path`` on the actor's node."""
        self._call("loads", str(path))

    def shutdown(self) -> None:
        """Kills the actor (its items are lost), and Ray itself if this buffer started it."""
        ray = _import_ray()
        if self._actor is not None:
            ray.kill(self._actor)
            self._actor = None
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
        self._owns_ray = False

    # ---------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, Any]:
        # A copy sent to another process shares the actor and never owns Ray.
        return {
            "_spec": self._spec,
            "_remote_config": self._remote_config,
            "_batch_size": self._batch_size,
            "_actor": self._start(),
            "_owns_ray": False,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __del__(self) -> None:
        return None  # no local prefetcher; the actor lives until shutdown() or Ray stops

    def __repr__(self) -> str:
        return f"RayReplayBuffer(replay_buffer_cls={self._spec[0].__name__}, actor={self._actor})"
