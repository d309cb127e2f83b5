"""SamplerEnsemble: chooses buffers of an ensemble, then items inside each."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rl_buffers.samplers.sampler import Sampler, check_batch_size
from rl_buffers.storages.storage import Storage

__all__ = ["SamplerEnsemble"]


class SamplerEnsemble(Sampler):
    """The samplers of a :class:`~rl_buffers.ReplayBufferEnsemble`, one per buffer.

    A batch of ``B`` items is made of ``num_buffer_sampled`` sub-batches of
    ``B // num_buffer_sampled`` items. With ``sample_from_all=True`` every buffer gives one
    sub-batch, in order; otherwise ``num_buffer_sampled`` buffer ids are drawn with
    replacement, uniformly or with probabilities ``p``, and each drawn buffer's sampler
    draws its sub-batch. ``sample`` returns ``((buffer_ids, [index per sub-batch]), [info
    per sub-batch])``, which :class:`~rl_buffers.StorageEnsemble` reads. The buffer draws go
    through the ensemble's generator (``ReplayBufferEnsemble(generator=)``), which it also
    hands to every sampler.

    Args:
        *samplers: the samplers, in buffer-id order.
        p: the probability of each buffer (normalised here). Not with ``sample_from_all``.
        sample_from_all: draw from every buffer. Defaults to False.
        num_buffer_sampled: sub-batches per batch. Defaults to the number of samplers (with
            ``sample_from_all`` it is always that).

    Raises:
        ValueError: no sampler, ``p`` with ``sample_from_all``, ``p`` of the wrong length or
            not a probability vector, a bad ``num_buffer_sampled``, or (at sampling) a batch
            size that is not a multiple of ``num_buffer_sampled``.
        TypeError: an argument is not a :class:`Sampler`.

    Examples:
        >>> import torch
        >>> from rl_buffers import LazyTensorStorage, RandomSampler, SamplerEnsemble, StorageEnsemble
        >>> a, b = LazyTensorStorage(10), LazyTensorStorage(10)
        >>> a.set(torch.arange(3), torch.zeros(3)); b.set(torch.arange(2), torch.ones(2))
        >>> sampler = SamplerEnsemble(RandomSampler(), RandomSampler(), sample_from_all=True)
        >>> (buffer_ids, indices), infos = sampler.sample(StorageEnsemble(a, b), 8)
        >>> buffer_ids.tolist(), [index.shape for index in indices]
        ([0, 1], [torch.Size([4]), torch.Size([4])])
    """

    def __init__(
        self,
        *samplers: Sampler,
        p: Tensor | list[float] | None = None,
        sample_from_all: bool = False,
        num_buffer_sampled: int | None = None,
    ) -> None:
        if not samplers:
            raise ValueError("SamplerEnsemble: expected at least one sampler, got none.")
        for i, sampler in enumerate(samplers):
            if not isinstance(sampler, Sampler):
                raise TypeError(
                    f"SamplerEnsemble: expected Sampler instances, got "
                    f"{type(sampler).__name__} at position {i}."
                )
        n = len(samplers)
        self._samplers = list(samplers)
        if p is not None:
            if sample_from_all:
                raise ValueError(
                    "SamplerEnsemble: p and sample_from_all=True exclude each other (every "
                    "buffer is sampled equally); drop one of them."
                )
            p = torch.as_tensor(p, dtype=torch.float64).reshape(-1)
            if p.numel() != n or not bool(torch.isfinite(p).all()) or bool((p < 0).any()):
                raise ValueError(
                    f"SamplerEnsemble: expected p to hold {n} finite non-negative weights, "
                    f"got {p.tolist()}."
                )
            if float(p.sum()) <= 0:
                raise ValueError("SamplerEnsemble: p sums to 0; give a buffer a weight > 0.")
            p = p / p.sum()
        self.p = p
        self.sample_from_all = sample_from_all
        if num_buffer_sampled is not None:
            check_batch_size("SamplerEnsemble(num_buffer_sampled)", num_buffer_sampled)
            if sample_from_all and num_buffer_sampled != n:
                raise ValueError(
                    f"SamplerEnsemble: with sample_from_all=True every one of the {n} buffers "
                    f"is sampled; got num_buffer_sampled={num_buffer_sampled}."
                )
        self.num_buffer_sampled = n if num_buffer_sampled is None else num_buffer_sampled

    def __getitem__(self, index: int) -> Sampler:
        return self._samplers[index]

    def __len__(self) -> int:
        return len(self._samplers)

    @property
    def _rng(self) -> torch.Generator | None:  # type: ignore[override]
        return self.__dict__.get("_generator")

    @_rng.setter
    def _rng(self, generator: torch.Generator | None) -> None:
        self.__dict__["_generator"] = generator
        for sampler in self._samplers:
            sampler._rng = generator

    def buffer_ids(self, batch_size: int) -> tuple[Tensor, int]:
        """The buffers drawn for a batch of ``batch_size`` and the sub-batch size."""
        k = self.num_buffer_sampled
        if batch_size % k:
            raise ValueError(
                f"SamplerEnsemble.sample: expected a batch size that is a multiple of "
                f"num_buffer_sampled={k} (one equal sub-batch per drawn buffer), got "
                f"{batch_size}."
            )
        n = len(self._samplers)
        if self.sample_from_all:
            ids = torch.arange(n)
        elif self.p is None:
            ids = torch.randint(n, (k,), generator=self._rng)
        else:
            ids = torch.multinomial(self.p, k, replacement=True, generator=self._rng)
        return ids, batch_size // k

    def sample(self, storage: Storage, batch_size: int) -> tuple[Any, Any]:
        storages = getattr(storage, "_storages", None)
        if storages is None or len(storages) != len(self._samplers):
            raise TypeError(
                f"SamplerEnsemble.sample: expected a StorageEnsemble of {len(self._samplers)} "
                f"storages, got {type(storage).__name__}."
            )
        ids, sub_batch = self.buffer_ids(batch_size)
        indices, infos = [], []
        for buffer_id in ids.tolist():
            index, info = self._samplers[buffer_id].sample(storages[buffer_id], sub_batch)
            indices.append(index)
            infos.append(info)
        return (ids, indices), infos

    def extend(self, index: Tensor) -> None:
        raise RuntimeError(
            "SamplerEnsemble: the ensemble's buffers tell their own samplers about writes."
        )

    def state_dict(self) -> dict[str, Any]:
        return {"samplers": [sampler.state_dict() for sampler in self._samplers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for sampler, state in zip(self._samplers, state_dict["samplers"], strict=True):
            sampler.load_state_dict(state)

    def _empty(self) -> None:
        for sampler in self._samplers:
            sampler._empty()

    def __repr__(self) -> str:
        return (
            f"SamplerEnsemble({', '.join(repr(s) for s in self._samplers)}, "
            f"sample_from_all={self.sample_from_all}, "
            f"num_buffer_sampled={self.num_buffer_sampled})"
        )
