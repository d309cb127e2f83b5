"""TensorDictReplayBuffer: a replay buffer of TensorDicts."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import Tensor

from rl_buffers.replay_buffers.replay_buffer import ReplayBuffer
from rl_buffers.samplers.sampler import Sampler, check_not_empty
from rl_buffers.storages._tree import expand_items
from rl_buffers.storages.tensor_storage import TensorStorage
from rl_buffers.writers.tensordict_round_robin import TensorDictRoundRobinWriter
from rl_buffers.writers.writer import Writer
from rl_core._accel import td_access

__all__ = ["TensorDictReplayBuffer"]


class TensorDictReplayBuffer(ReplayBuffer):
    """A :class:`ReplayBuffer` of TensorDicts that writes sampling info into each batch.

    Every sampled batch holds its storage index under ``"index"`` (``[B]``, or ``[B, ndim]``
    for a multi-dim storage) and the sampler's per-item info: ``"priority_weight"`` for
    prioritized samplers, ``("next", "truncated")`` at slice ends for slice samplers. With
    a prioritized sampler, ``extend`` takes the initial priorities from ``priority_key``
    when the batch has it, and :meth:`update_tensordict_priority` reads ``"index"`` and
    ``priority_key`` from a batch. The default writer is
    :class:`~rl_buffers.TensorDictRoundRobinWriter`.

    Args:
        priority_key: the entry holding priorities. Defaults to ``"td_error"``.
        **kwargs: as :class:`ReplayBuffer` (``storage``, ``sampler``, ``writer``,
            ``collate_fn``, ``batch_size``, ``prefetch``, ``transform``, ``pin_memory``,
            ``generator``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, TensorDictReplayBuffer
        >>> buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=8)
        >>> _ = buffer.extend(TensorDict({"obs": torch.randn(20, 3)}, [20]))
        >>> batch = buffer.sample()
        >>> batch["obs"].shape, batch["index"].shape
        (torch.Size([8, 3]), torch.Size([8]))
    """

    def __init__(self, *, priority_key: Any = "td_error", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.priority_key = priority_key
        storage, cls = self._storage, type(self)
        # A 1-D tensor storage (its batches are rows of its leaf tree), fixed with the
        # storage: read by _read and by the two direct paths below.
        self._rows_1d = isinstance(storage, TensorStorage) and storage.ndim == 1
        # Whether update_tensordict_priority may hand a batch's flat indices straight to the
        # sampler (see there).
        self._direct_update = (
            self._rows_1d
            and type(storage).ravel is TensorStorage.ravel
            and cls.update_priority is ReplayBuffer.update_priority
        )
        # Whether sample() without a batch size may go straight to the sampler, _read and
        # _postprocess (see sample). The settings read here are fixed at construction; the
        # transforms are checked on each call.
        self._direct = (
            self._rows_1d
            and self._batch_size is not None
            and self._prefetch is None
            and self._collate_fn is None
            and not self._pin_memory
            and type(storage).unravel is TensorStorage.unravel
            and all(
                getattr(cls, name) is getattr(TensorDictReplayBuffer, name)
                for name in ("_sample_batch", "_sample_index", "_read", "_postprocess")
            )
        )

    def _default_writer(self) -> Writer:
        return TensorDictRoundRobinWriter(self.compilable)

    @property
    def _prioritized(self) -> bool:
        return type(self._sampler).update_priority is not Sampler.update_priority

    def extend(self, data: Any, *, update_priority: bool | None = None) -> Tensor:
        """Writes a batch, as :meth:`ReplayBuffer.extend` does; with a prioritized sampler,
        the items' priorities are then set from ``priority_key`` when the batch holds it.

        Args:
            data: the batch.
            update_priority: whether to set the priorities from the batch (``None``: yes,
                TorchRL's default); ``False`` leaves the new items at the default priority.
        """
        index = super().extend(data)
        if (
            update_priority is not False
            and self._prioritized
            and isinstance(data, TensorDictBase)
            and self.priority_key in data.keys(True, True)
            and index.shape[:1] == data.shape[:1]
        ):
            self.update_priority(index, data.get(self.priority_key))
        return index

    def sample(
        self,
        batch_size: int | None = None,
        return_info: bool = False,
        include_info: bool | None = None,
    ) -> Any:
        """Samples a batch, as :meth:`ReplayBuffer.sample` does.

        Args:
            batch_size: items to draw; defaults to the buffer's ``batch_size``.
            return_info: also return the info dict.
            include_info: TorchRL's switch for the info entries (``"index"``, the weights)
                in the batch: ``None`` or ``True`` (the default behaviour) writes them,
                ``False`` leaves them out.
        """
        if include_info is False:
            data, info = self.sample(batch_size, return_info=True)
            data = data.exclude(*(key for key in info if key in data.keys(True)))
            return (data, info) if return_info else data
        if batch_size is None and self._direct and not self._transforms._modules:
            # The training loop's call: what ReplayBuffer.sample's layers do for it (no
            # prefetch, collate, transform or pinning; a 1-D storage's unravel is the
            # identity), in one frame: the lock, the sampler's draw, _read, _postprocess.
            storage = self._storage
            with self._lock:
                if not len(storage):
                    check_not_empty(f"{type(self).__name__}.sample", storage)
                index, info = self._sampler.sample(storage, self._batch_size)
                info["index"] = index
                if self._writer.tracks_generations:
                    info["index_generation"] = self._writer.generations_of(index)
                data = self._read(index, info)
            data = self._postprocess(data, info)
            return (data, info) if return_info else data
        return super().sample(batch_size, return_info)

    def _read(self, index: Tensor, info: dict[str, Any]) -> Any:
        storage = self._storage
        if self._rows_1d and index.dim() == 1 and not storage._tree.is_tensor:
            # The info entries go into the batch in its constructor (one TensorDict build).
            extra = {
                key: value
                for key, value in info.items()
                if type(key) is str and isinstance(value, Tensor) and value.shape[:1] == index.shape
            }
            # The entries are checked as TensorStorage.get(extra=) checks them: a CPU tree
            # reads straight away (unless a subclass reads its own way), other devices move
            # the index first.
            tree = storage._tree
            if tree.on_cpu and type(storage).get is TensorStorage.get:
                data = tree.get_rows(index, extra)
            else:
                data = storage.get(index, extra=extra)
            info["_written"] = extra
            return data
        return storage.get(index)

    def _postprocess(self, data: Any, info: dict[str, Any]) -> Any:
        written = info.pop("_written", {})
        if len(written) == len(info) or not isinstance(data, TensorDictBase):
            return data  # every entry written by _read (written holds entries of info)
        for key, value in info.items():
            if key in written:
                continue
            if isinstance(value, tuple):
                value = torch.stack(value, -1)
            if isinstance(value, Tensor) and value.shape[:1] == data.shape[:1]:
                if data.batch_dims > 1:  # [B, T] items: one value per item, over its steps
                    value = expand_items(value, data.batch_size)
                data.set(key, value)
        return data

    def update_tensordict_priority_async(self, data: TensorDictBase) -> Future:
        """Queues :meth:`update_tensordict_priority` (see
        :meth:`ReplayBuffer.update_priority_async`): ``"index"`` and ``priority_key`` are
        read now, the trees written by the buffer's priority thread.

        Raises:
            KeyError: the batch lacks one of the entries.
        """
        keys = data.keys(True, True)
        for name in ("index", self.priority_key):
            if name not in keys:
                raise KeyError(
                    f"{type(self).__name__}.update_tensordict_priority_async: the TensorDict "
                    f"has no {name!r} entry (keys: {list(keys)}). Pass a sampled batch with "
                    f"{self.priority_key!r} set."
                )
        index, priority = data.get("index"), data.get(self.priority_key)
        if index.dim() == 2 and getattr(self._storage, "ndim", 1) > 1:
            index = tuple(index.unbind(-1))
            priority = priority.reshape(index[0].shape[0], -1)
        return self.update_priority_async(index, priority)

    def update_tensordict_priority(self, data: TensorDictBase) -> None:
        """Updates priorities from a batch's ``"index"`` and ``priority_key`` entries.

        Raises:
            KeyError: the batch lacks one of them.
        """
        key = self.priority_key
        # Both entries read straight from a plain TensorDict's entry dicts when they are
        # tensors there; anything else (a missing entry, a lazy stack) takes the generic path.
        index = td_access.get_leaf(data, ("index",), None)
        priority = td_access.get_leaf(data, key if isinstance(key, tuple) else (key,), None)
        if not (isinstance(index, Tensor) and isinstance(priority, Tensor)):
            keys = data.keys(True, True)
            for name in ("index", key):
                if name not in keys:
                    raise KeyError(
                        f"{type(self).__name__}.update_tensordict_priority: the TensorDict has "
                        f"no {name!r} entry (keys: {list(keys)}). Pass a sampled batch with "
                        f"{key!r} set."
                    )
            index = data.get("index")
            priority = data.get(key)
        if index.dim() == 2 and getattr(self._storage, "ndim", 1) > 1:
            index = tuple(index.unbind(-1))  # [B, ndim] storage indices
            priority = priority.reshape(index[0].shape[0], -1)
        elif self._direct_update and index.dim() == 1 and index.dtype == torch.int64:
            # ReplayBuffer.update_priority, whose ravel gives a 1-D storage's flat item
            # numbers back as they are
            with self._lock:
                self._sampler.update_priority(index, priority)
            return
        self.update_priority(index, priority)
