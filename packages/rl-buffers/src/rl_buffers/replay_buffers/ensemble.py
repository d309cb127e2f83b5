"""ReplayBufferEnsemble: samples batches made of sub-batches from several buffers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDictBase, lazy_stack
from torch import Tensor

from rl_buffers.replay_buffers.replay_buffer import ReplayBuffer
from rl_buffers.samplers.ensemble import SamplerEnsemble
from rl_buffers.storages._files import atomic_save, atomic_write_json, load_file
from rl_buffers.storages.ensemble import StorageEnsemble
from rl_buffers.writers.ensemble import WriterEnsemble
from rl_core.transforms import Transform

__all__ = ["ReplayBufferEnsemble"]


class ReplayBufferEnsemble(ReplayBuffer):
    """Several replay buffers sampled as one (TorchRL's ``ReplayBufferEnsemble``).

    Each batch holds ``num_buffer_sampled`` sub-batches of ``batch_size //
    num_buffer_sampled`` items, stacked along a new first dim: from every buffer in order
    (``sample_from_all=True``) or from buffers drawn with replacement, uniformly or with
    probabilities ``p`` (see :class:`~rl_buffers.SamplerEnsemble`). Each sub-batch is read,
    collated, post-processed and transformed by its own buffer (its sampler's info, e.g.
    ``"priority_weight"``, included), then the ensemble's ``transform`` runs on the stacked
    batch. TensorDict sub-batches get ``"index"`` as ``[sub_batch, 2]`` pairs ``(buffer id,
    item index)``; sub-batches with the same keys stack densely, others lazily
    (``tensordict.lazy_stack``). Writing goes through each buffer (``ensemble[i].extend``):
    the ensemble refuses ``add``/``extend``.

    Build it from buffers (``ReplayBufferEnsemble(rb0, rb1, ...)``) or from components
    (``storages=StorageEnsemble(...)``, ``samplers=SamplerEnsemble(...)``,
    ``writers=WriterEnsemble(...)``, and ``collate_fns`` one per buffer).

    Args:
        *rbs: the buffers.
        storages, samplers, writers: the components, when no buffers are given.
        transform: run on each stacked batch.
        batch_size: the default batch size of ``sample()``.
        collate_fn: stacks the list of sub-batches; defaults to the stacking above.
        collate_fns: one collate function per buffer (components only; buffers keep theirs).
        p, sample_from_all, num_buffer_sampled: as in :class:`~rl_buffers.SamplerEnsemble`
            (when ``samplers`` is given, its own settings are used).
        generator: draws of the ensemble and of every buffer's sampler.
        **kwargs: ``prefetch``, ``pin_memory`` as in :class:`ReplayBuffer`.

    Raises:
        ValueError: both buffers and components, or neither; components of different
            lengths.
        TypeError: a positional argument is not a :class:`ReplayBuffer`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, ReplayBufferEnsemble, TensorDictReplayBuffer
        >>> pixels = TensorDictReplayBuffer(storage=LazyTensorStorage(100))
        >>> _ = pixels.extend(TensorDict({"pixels": torch.zeros(10, 3, 8, 8)}, [10]))
        >>> states = TensorDictReplayBuffer(storage=LazyTensorStorage(100))
        >>> _ = states.extend(TensorDict({"observation": torch.ones(10, 4)}, [10]))
        >>> ensemble = ReplayBufferEnsemble(pixels, states, batch_size=8, sample_from_all=True)
        >>> batch = ensemble.sample()
        >>> batch.batch_size, batch[0]["pixels"].shape, batch[1]["index"][:, 0].tolist()
        (torch.Size([2, 4]), torch.Size([4, 3, 8, 8]), [1, 1, 1, 1])
    """

    def __init__(
        self,
        *rbs: ReplayBuffer,
        storages: StorageEnsemble | None = None,
        samplers: SamplerEnsemble | None = None,
        writers: WriterEnsemble | None = None,
        transform: Transform | None = None,
        batch_size: int | None = None,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        collate_fns: Sequence[Callable[[Any], Any] | None] | None = None,
        p: Tensor | list[float] | None = None,
        sample_from_all: bool = False,
        num_buffer_sampled: int | None = None,
        generator: torch.Generator | None = None,
        **kwargs: Any,
    ) -> None:
        name = "ReplayBufferEnsemble"
        components = (storages, samplers, writers)
        if rbs:
            if any(part is not None for part in components) or collate_fns is not None:
                raise ValueError(
                    f"{name}: pass either buffers or storages=/samplers=/writers=/"
                    f"collate_fns=, not both."
                )
            for i, rb in enumerate(rbs):
                if not isinstance(rb, ReplayBuffer):
                    raise TypeError(
                        f"{name}: expected ReplayBuffer instances, got {type(rb).__name__} at "
                        f"position {i}."
                    )
            self._rbs = list(rbs)
        else:
            if any(part is None for part in components):
                raise ValueError(
                    f"{name}: expected buffers, or all of storages=, samplers= and writers= "
                    f"(StorageEnsemble, SamplerEnsemble, WriterEnsemble)."
                )
            n = len(storages._storages)
            fns = list(collate_fns) if collate_fns is not None else [None] * n
            if not len(samplers) == len(writers) == len(fns) == n:
                raise ValueError(
                    f"{name}: expected as many samplers, writers and collate_fns as the {n} "
                    f"storages, got {len(samplers)}, {len(writers)} and {len(fns)}."
                )
            self._rbs = [
                ReplayBuffer(storage=s, sampler=sa, writer=w, collate_fn=fn)
                for s, sa, w, fn in zip(
                    storages._storages, samplers._samplers, writers._writers, fns, strict=True
                )
            ]
        if samplers is None:
            samplers = SamplerEnsemble(
                *(rb.sampler for rb in self._rbs),
                p=p,
                sample_from_all=sample_from_all,
                num_buffer_sampled=num_buffer_sampled,
            )
        storages = storages or StorageEnsemble(*(rb.storage for rb in self._rbs))
        writers = writers or WriterEnsemble(*(rb.writer for rb in self._rbs))
        super().__init__(
            storage=storages,
            sampler=samplers,
            writer=writers,
            collate_fn=collate_fn or stack_sub_batches,
            batch_size=batch_size,
            transform=transform,
            generator=generator,
            **kwargs,
        )

    def __getitem__(self, index: Any) -> Any:
        """``ensemble[i]`` is buffer ``i``; ``ensemble[i, index]`` is ``ensemble[i][index]``."""
        if isinstance(index, int) and not isinstance(index, bool):
            return self._rbs[index]
        if isinstance(index, tuple) and len(index) == 2 and isinstance(index[0], int):
            return self._rbs[index[0]][index[1]]
        raise TypeError(
            f"ReplayBufferEnsemble[...]: expected a buffer number or (buffer number, index), "
            f"got {type(index).__name__}."
        )

    def add(self, data: Any) -> int:
        return self._writer.add(data)  # (refused, with the message saying what to do)

    def extend(self, data: Any) -> Tensor:
        return self._writer.extend(data)

    def _sample_index(self, batch_size: int) -> tuple[list[Any], dict[str, Any]]:
        with self._lock:
            (ids, indices), infos = self._sampler.sample(self._storage, batch_size)
            batches = []
            for buffer_id, index, info in zip(ids.tolist(), indices, infos, strict=True):
                rb = self._rbs[buffer_id]
                info["index"] = rb.storage.unravel(index)
                data = rb._read(index, info)
                if rb._collate_fn is not None:
                    data = rb._collate_fn(data)
                data = rb._postprocess(data, info)
                if len(rb._transforms):
                    data = rb.transform(data)
                if isinstance(data, TensorDictBase):
                    flat = index.reshape(-1)
                    pairs = torch.stack([torch.full_like(flat, buffer_id), flat], -1)
                    data.set("index", pairs.reshape(*data.batch_size, 2))
                batches.append(data)
        return batches, {"index": (ids, indices), "buffer_ids": ids, "infos": infos}

    def update_priority(self, index: Any, priority: Tensor | float) -> None:
        """Sets priorities; ``index`` holds ``(buffer id, item index)`` pairs (``[..., 2]``)."""
        index = torch.as_tensor(index).reshape(-1, 2)
        priority = torch.as_tensor(priority).reshape(-1).expand(len(index))
        for buffer_id in index[:, 0].unique().tolist():
            mine = index[:, 0] == buffer_id
            self._rbs[buffer_id].update_priority(index[mine, 1], priority[mine])

    def update_tensordict_priority(
        self, data: TensorDictBase, priority_key: Any = "td_error"
    ) -> None:
        """Reads ``"index"`` pairs and ``priority_key`` from a sampled batch and updates."""
        self.update_priority(data.get("index"), data.get(priority_key))

    def dumps(self, path: str | Path) -> None:
        """Saves each buffer under ``path/rb_<i>`` and the ensemble's transform; the
        ensemble's ``buffer.json`` comes last."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        with self._lock:
            (path / "buffer.json").unlink(missing_ok=True)
            for i, rb in enumerate(self._rbs):
                rb.dumps(path / f"rb_{i}")
            atomic_save(self._transform.state_dict(), path / "transform.pt")
            atomic_write_json(
                {"type": "ReplayBufferEnsemble", "buffers": len(self._rbs)}, path / "buffer.json"
            )

    def loads(self, path: str | Path) -> None:
        """Restores what :meth:`dumps` saved: each buffer's own ``loads`` (whole or not at all
        per buffer), after checking the checkpoint holds every buffer's.

        Raises:
            FileNotFoundError: ``path`` holds no complete ensemble checkpoint.
        """
        path = Path(path)
        where = "ReplayBufferEnsemble.loads"
        missing = [
            str(file)
            for file in [path / "buffer.json"]
            + [path / f"rb_{i}" / "buffer.json" for i in range(len(self._rbs))]
            if not file.exists()
        ]
        if missing:
            raise FileNotFoundError(
                f"{where}: {path} holds no complete checkpoint of {len(self._rbs)} buffers "
                f"(missing {', '.join(missing)}). Pass a directory written by dumps()."
            )
        transform = load_file(where, path / "transform.pt")
        self._drop_prefetched()
        with self._lock:
            for i, rb in enumerate(self._rbs):
                rb.loads(path / f"rb_{i}")
            self._transform.load_state_dict(transform)


def stack_sub_batches(batches: list[Any]) -> Any:
    """Stacks sub-batches along a new first dim: TensorDicts with the same keys densely,
    others lazily; tensors with ``torch.stack``; anything else is left as the list."""
    if all(isinstance(batch, TensorDictBase) for batch in batches):
        keys = [set(batch.keys(True, True)) for batch in batches]
        if all(k == keys[0] for k in keys):
            try:
                return torch.stack(batches)
            except RuntimeError:  # same keys, other shapes
                pass
        return lazy_stack(batches)
    if all(isinstance(batch, Tensor) for batch in batches):
        return torch.stack(batches)
    return batches
