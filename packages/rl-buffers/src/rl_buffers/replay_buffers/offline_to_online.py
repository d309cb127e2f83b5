"""OfflineToOnlineReplayBuffer: batches mixing a fixed offline dataset and online experience."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_buffers.replay_buffers.replay_buffer import ReplayBuffer
from rl_buffers.replay_buffers.tensordict_buffer import TensorDictReplayBuffer
from rl_buffers.samplers.sampler import check_batch_size
from rl_buffers.storages.lazy_tensor import LazyTensorStorage
from rl_buffers.storages.storage import Storage
from rl_core.transforms import Transform

__all__ = ["OfflineToOnlineReplayBuffer"]

DEFAULT_ONLINE_CAPACITY = 1_000_000


class OfflineToOnlineReplayBuffer:
    """An offline dataset that is never written, beside an online buffer that grows.

    :meth:`extend` writes into the online buffer only. :meth:`sample` draws exactly
    ``round(offline_fraction * batch_size)`` items from the offline dataset (with its own
    sampler) and the rest from the online buffer (uniformly), and concatenates them into
    one ``[batch_size]`` TensorDict, offline items first; the split holds on every call, not
    only on average. Before the first ``extend``, or with ``offline_fraction == 0`` (anneal
    it by assigning the attribute), one buffer gives the whole batch. Both must hold the
    same entries (the same env's TED data); ``transform`` runs on the concatenated batch.

    Args:
        offline_dataset: a :class:`ReplayBuffer` of TensorDicts (e.g.
            ``rl_buffers.datasets.MinariExperienceReplay``). TorchRL's ``"minari:<id>"``
            strings are not accepted: build the dataset and pass it.
        online_storage: the online buffer's storage; excludes ``online_capacity``.
        online_capacity: the size of a ``LazyTensorStorage`` for the online buffer when no
            storage is given. Defaults to 1,000,000.
        offline_fraction: the share of each batch drawn offline, in ``[0, 1]``. Defaults
            to 0.5.
        batch_size: the default batch size of :meth:`sample`.
        transform: an rl-core ``Transform`` run on each batch.
        **dataset_kwargs: TorchRL builds a dataset from a string with these; refused here.

    Raises:
        TypeError: ``offline_dataset`` is not a ReplayBuffer, or ``dataset_kwargs`` given.
        ValueError: both ``online_storage`` and ``online_capacity``; a fraction outside
            ``[0, 1]``; (at sampling) the two batches do not have the same entries.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, OfflineToOnlineReplayBuffer, TensorDictReplayBuffer
        >>> offline = TensorDictReplayBuffer(storage=LazyTensorStorage(100))
        >>> _ = offline.extend(TensorDict({"obs": torch.zeros(100, 3)}, [100]))
        >>> rb = OfflineToOnlineReplayBuffer(offline, online_capacity=1000, offline_fraction=0.25, batch_size=8)
        >>> _ = rb.extend(TensorDict({"obs": torch.ones(10, 3)}, [10]))
        >>> rb.sample()["obs"][:, 0].tolist()
        [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """

    def __init__(
        self,
        offline_dataset: ReplayBuffer,
        *,
        online_storage: Storage | None = None,
        online_capacity: int | None = None,
        offline_fraction: float = 0.5,
        batch_size: int | None = None,
        transform: Transform | None = None,
        **dataset_kwargs: Any,
    ) -> None:
        name = "OfflineToOnlineReplayBuffer"
        if not isinstance(offline_dataset, ReplayBuffer):
            hint = (
                " Build the dataset (rl_buffers.datasets.MinariExperienceReplay(dataset_id)) "
                "and pass it."
                if isinstance(offline_dataset, str)
                else ""
            )
            raise TypeError(
                f"{name}: expected offline_dataset to be a ReplayBuffer, got "
                f"{type(offline_dataset).__name__}.{hint}"
            )
        if dataset_kwargs:
            raise TypeError(
                f"{name}: dataset keyword arguments {sorted(dataset_kwargs)} build a dataset "
                f"from a string in TorchRL; pass a built dataset instead."
            )
        if online_storage is not None and online_capacity is not None:
            raise ValueError(f"{name}: pass online_storage or online_capacity, not both.")
        if online_storage is None:
            capacity = DEFAULT_ONLINE_CAPACITY if online_capacity is None else online_capacity
            online_storage = LazyTensorStorage(capacity)
        self.offline_dataset = offline_dataset
        self.online_buffer = TensorDictReplayBuffer(storage=online_storage)
        self.offline_fraction = offline_fraction
        self.batch_size = check_batch_size(name, batch_size) if batch_size is not None else None
        self.transform = transform

    @property
    def offline_fraction(self) -> float:
        """The share of each batch drawn from the offline dataset (assign to anneal it)."""
        return self._offline_fraction

    @offline_fraction.setter
    def offline_fraction(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ValueError(
                f"OfflineToOnlineReplayBuffer: expected offline_fraction in [0, 1], got {value!r}."
            )
        self._offline_fraction = float(value)

    def __len__(self) -> int:
        """Items of both parts."""
        return len(self.offline_dataset) + len(self.online_buffer)

    def extend(self, data: TensorDictBase) -> torch.Tensor:
        """Writes ``data`` into the online buffer; returns its indices there."""
        return self.online_buffer.extend(data)

    def add(self, data: TensorDictBase) -> int:
        """Writes one item into the online buffer."""
        return self.online_buffer.add(data)

    def split(self, batch_size: int) -> tuple[int, int]:
        """How many items of a batch come from each part: ``(offline, online)``."""
        if not len(self.online_buffer):
            return batch_size, 0
        offline = round(self._offline_fraction * batch_size)
        return offline, batch_size - offline

    def sample(self, batch_size: int | None = None) -> TensorDictBase:
        """A batch of ``batch_size`` items (default: the buffer's), offline items first."""
        name = "OfflineToOnlineReplayBuffer.sample"
        if batch_size is None:
            if self.batch_size is None:
                raise ValueError(
                    f"{name}: no batch_size; pass sample(batch_size) or build the buffer with "
                    f"batch_size=."
                )
            batch_size = self.batch_size
        check_batch_size(name, batch_size)
        offline, online = self.split(batch_size)
        parts = []
        if offline:
            parts.append(self.offline_dataset.sample(offline))
        if online:
            parts.append(self.online_buffer.sample(online))
        if len(parts) == 1:
            batch = parts[0]
        else:
            keys = [set(part.keys(True, True)) for part in parts]
            if keys[0] != keys[1]:
                raise ValueError(
                    f"{name}: the offline and online batches hold different entries "
                    f"(offline only: {sorted(map(str, keys[0] - keys[1]))}, online only: "
                    f"{sorted(map(str, keys[1] - keys[0]))}); write online data with the "
                    f"offline dataset's entries."
                )
            batch = torch.cat(parts, 0)
        if self.transform is not None:
            batch = self.transform(batch)
        return batch

    def __repr__(self) -> str:
        return (
            f"OfflineToOnlineReplayBuffer(offline={len(self.offline_dataset)}, "
            f"online={len(self.online_buffer)}, offline_fraction={self._offline_fraction})"
        )
