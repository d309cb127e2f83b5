"""ReplayBuffer: a storage, a sampler and a writer behind one object."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_buffers.replay_buffers._prefetch import Prefetcher
from rl_buffers.samplers.consuming import ConsumingSampler
from rl_buffers.samplers.random import RandomSampler
from rl_buffers.samplers.sampler import Sampler, check_batch_size, check_not_empty
from rl_buffers.storages._files import atomic_save, atomic_write_json, load_file
from rl_buffers.storages._manifest import check_files, describe_files
from rl_buffers.storages.list_storage import ListStorage, stack_items
from rl_buffers.storages.storage import Storage, check_compilable
from rl_buffers.storages.tensor_storage import TensorStorage
from rl_buffers.writers.round_robin import RoundRobinWriter, batch_len
from rl_buffers.writers.writer import Writer
from rl_core.transforms import Compose, Transform

__all__ = ["ReplayBuffer"]


class ReplayBuffer:
    """Stores items and samples batches of them.

    ``extend(batch)``/``add(item)`` go through the writer into the storage and tell the
    sampler which items changed; ``sample()`` asks the sampler for item numbers, reads them
    from the storage, collates them and applies the transforms. All of it runs under one
    lock, so a collector thread may ``extend`` while the learner samples. With
    ``prefetch=N``, N batches are sampled ahead in background threads.

    Args:
        storage: defaults to ``ListStorage(1000)``.
        sampler: defaults to :class:`RandomSampler`.
        writer: defaults to :class:`RoundRobinWriter`.
        collate_fn: maps what the storage returns to a batch; defaults to stacking for a
            ``ListStorage`` and to nothing for tensor storages.
        batch_size: default batch size of ``sample()`` (required with ``prefetch``).
        prefetch: batches to sample ahead in threads. Defaults to None; None and 0 mean
            none.
        transform: an rl-core ``Transform`` (or a function of the batch, as TorchRL takes)
            run on every sampled batch (and a Transform's inverse on
            written batches, if it has one).
        pin_memory: pin sampled tensors (needs CUDA).
        generator: a ``torch.Generator`` for the sampler's draws, as TorchRL's
            ``generator=``: a buffer seeded on its own draws the same batches whatever else
            uses torch's global generator. Defaults to None (the global generator). It does
            not reach the transforms. See :meth:`set_rng`.
        consume_after_n_samples: TorchRL's shortcut for
            ``sampler=ConsumingSampler(consume_after_n_samples)``: each item is consumed
            after that many returns (``len`` drops it, writes refill its slot first). Only
            with the default sampler or a ``ConsumingSampler`` of the same count. Defaults
            to None (items are never consumed).
        compilable: TorchRL's keyword, passed to the default storage and writer (those
            given keep their own); see :class:`Storage` (both values behave alike here).
            Defaults to False.
        delayed_init: TorchRL's keyword; only False (the default: the buffer is built at
            once) is accepted.

    Raises:
        ValueError: ``delayed_init`` other than False, a ``drop_last=True`` sampler or
            ``prefetch`` without ``batch_size``,
            ``pin_memory`` without CUDA, a ``consume_after_n_samples`` the sampler
            contradicts, or (with a ``ConsumingSampler``) ``prefetch`` or an ``ndim > 1``
            storage.
        TypeError: ``generator`` is not a ``torch.Generator`` or ``compilable`` not a bool;
            with a ``ConsumingSampler``, a storage other than list and tensor ones or a
            writer without ``write_at``.

    Examples:
        >>> import torch
        >>> from rl_buffers import LazyTensorStorage, ReplayBuffer
        >>> buffer = ReplayBuffer(storage=LazyTensorStorage(100), batch_size=4)
        >>> index = buffer.extend(torch.arange(10.0).unsqueeze(-1))
        >>> len(buffer), buffer.sample().shape
        (10, torch.Size([4, 1]))
    """

    def __init__(
        self,
        *,
        storage: Storage | None = None,
        sampler: Sampler | None = None,
        writer: Writer | None = None,
        collate_fn: Callable[[Any], Any] | None = None,
        batch_size: int | None = None,
        prefetch: int | None = None,
        transform: Transform | None = None,
        pin_memory: bool = False,
        generator: torch.Generator | None = None,
        consume_after_n_samples: int | None = None,
        compilable: bool = False,
        delayed_init: bool = False,
    ) -> None:
        name = type(self).__name__
        self.compilable = check_compilable(name, compilable)
        if delayed_init is not False:
            raise ValueError(
                f"{name}: delayed_init={delayed_init!r} is not supported: the buffer is built "
                f"from the storage, sampler and writer instances it is given, at once (it "
                f"pickles whole to other processes). Pass delayed_init=False (the default)."
            )
        self._storage = storage if storage is not None else ListStorage(1000, compilable=compilable)
        self._sampler = _consuming_sampler(name, sampler, consume_after_n_samples)
        # Samplers that read what was written (StreamingSliceSampler) define mark_update.
        self._mark_update = getattr(self._sampler, "mark_update", None)
        self._writer = writer if writer is not None else self._default_writer()
        self._writer.register_storage(self._storage)
        if collate_fn is None:
            collate_fn = stack_items if isinstance(self._storage, ListStorage) else None
        self._collate_fn = collate_fn
        self._batch_size = check_batch_size(name, batch_size) if batch_size is not None else None
        if batch_size is None and getattr(self._sampler, "drop_last", False):
            raise ValueError(
                f"{name}: Samplers with drop_last=True must work with a predictable batch-size "
                f"(TorchRL's words): {type(self._sampler).__name__}(drop_last=True) needs the "
                f"buffer's batch_size=, got None. Pass batch_size= or drop_last=False."
            )
        if prefetch is not None and (
            isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0
        ):
            raise ValueError(
                f"{name}: expected prefetch to be an int >= 0 or None (0 and None: no "
                f"prefetching), got {prefetch!r}."
            )
        prefetch = prefetch or None  # 0 means none, as in TorchRL
        if prefetch and batch_size is None:
            raise ValueError(
                f"{name}: prefetch={prefetch} needs a batch_size at construction (the batches "
                f"are sampled ahead)."
            )
        if pin_memory and not torch.cuda.is_available():
            raise ValueError(
                f"{name}: pin_memory=True needs a CUDA device, and torch sees none. Leave "
                f"pin_memory=False on CPU-only machines."
            )
        self._pin_memory = pin_memory
        self._transform = Compose()
        self._transforms = self._transform.transforms  # the ModuleList Compose edits in place
        if transform is not None:
            self.append_transform(transform)
        self._lock = threading.RLock()
        self._priority_worker: ThreadPoolExecutor | None = None
        self._rng: torch.Generator | None = None
        if generator is not None:
            self.set_rng(generator)
        self._prefetch = Prefetcher(self._sample_batch, prefetch) if prefetch else None
        self._consuming = isinstance(self._sampler, ConsumingSampler)
        if self._consuming:
            _check_consuming(name, self._storage, self._writer, prefetch)
        next_row = getattr(self._storage, "next_row", None)
        if len(self._storage) and isinstance(next_row, int):
            # A storage reopened from disk: go on writing after its last item.
            self._writer.load_state_dict({**self._writer.state_dict(), "cursor": next_row})

    def _default_writer(self) -> Writer:
        return RoundRobinWriter(self.compilable)

    # ---------------------------------------------------------------- parts
    @property
    def storage(self) -> Storage:
        return self._storage

    @property
    def sampler(self) -> Sampler:
        return self._sampler

    @property
    def writer(self) -> Writer:
        return self._writer

    @property
    def batch_size(self) -> int | None:
        return self._batch_size

    @property
    def transform(self) -> Compose:
        """The transforms applied to sampled batches, in order."""
        return self._transform

    def append_transform(self, transform: Transform) -> ReplayBuffer:
        """Adds ``transform`` after the existing ones; returns the buffer."""
        self._transform.append(_checked_transform(type(self).__name__, transform))
        return self

    def insert_transform(self, index: int, transform: Transform) -> ReplayBuffer:
        """Inserts ``transform`` at position ``index``; returns the buffer."""
        self._transform.insert(index, _checked_transform(type(self).__name__, transform))
        return self

    def __len__(self) -> int:
        if self._consuming:  # TorchRL: the items a ConsumingSampler can still draw
            with self._lock:
                return self._sampler.num_sampleable(self._storage)
        return len(self._storage)

    def set_rng(self, generator: torch.Generator) -> None:
        """Makes the sampler draw with ``generator`` (as TorchRL's ``set_rng``).

        Examples:
            >>> import torch
            >>> from rl_buffers import LazyTensorStorage, ReplayBuffer
            >>> buffer = ReplayBuffer(storage=LazyTensorStorage(100))
            >>> _ = buffer.extend(torch.arange(100))
            >>> buffer.set_rng(torch.Generator().manual_seed(0))
            >>> first = buffer.sample(5)
            >>> buffer.set_rng(torch.Generator().manual_seed(0))
            >>> torch.equal(first, buffer.sample(5))
            True
        """
        if not isinstance(generator, torch.Generator):
            raise TypeError(
                f"{type(self).__name__}: expected generator to be a torch.Generator, got "
                f"{type(generator).__name__}. Build one with torch.Generator().manual_seed(seed)."
            )
        with self._lock:
            self._rng = generator
            self._sampler._rng = generator

    def __getitem__(self, index: Any) -> Any:
        """Stored items by position, with the buffer's transforms applied (as ``sample``).

        ``index`` is read as :meth:`Storage.__getitem__` reads it: an int (one item,
        negative from the end), a slice, a list or tensor of ints, a boolean mask over the
        stored items. A list of items (a ``ListStorage``'s) goes through ``collate_fn``.
        A string or a tuple of strings reads that entry of every stored item
        (``buffer["observation"]`` is ``buffer[:]["observation"]``). Nothing is sampled:
        the sampler, the writer and the prefetched batches are left as they are.

        Raises:
            IndexError: a position is outside ``[-len, len)``.

        Examples:
            >>> import torch
            >>> from rl_buffers import LazyTensorStorage, ReplayBuffer
            >>> buffer = ReplayBuffer(storage=LazyTensorStorage(10))
            >>> _ = buffer.extend(torch.arange(5.0))
            >>> buffer[1:3].tolist(), buffer[-1].item(), buffer[torch.tensor([4, 0])].tolist()
            ([1.0, 2.0], 4.0, [4.0, 0.0])
        """
        if isinstance(index, str) or (
            isinstance(index, tuple) and index and all(isinstance(key, str) for key in index)
        ):
            return self[:][index]
        if len(self._transforms) and isinstance(index, int) and not isinstance(index, bool):
            # a batch of one: transforms may write in place, and a ListStorage would hand
            # them the stored object itself
            return self[[index]][0]
        with self._lock:
            data = self._storage[index]
        if isinstance(data, list) and self._collate_fn is not None:
            data = self._collate_fn(data)
        if len(self._transforms):
            data = self._transform(data)
        return data

    # ---------------------------------------------------------------- writes
    def __setitem__(self, index: Any, data: Any) -> None:
        """Overwrites stored items by position (TorchRL's ``buffer[index] = data``).

        ``index`` is read as :meth:`__getitem__` reads it (an int, a slice, a list or tensor
        of ints, a boolean mask over the stored items); ``data`` holds one item per
        position (one item for an int), inverse-transformed as ``extend`` does. The items
        go through the writer's ``write_at``: the length and the writer's cursor stay as
        they are, and the sampler is told those items were rewritten.

        Raises:
            IndexError: a position is outside ``[-len, len)``.
            TypeError: ``index`` names entries (write whole items), the storage has
                ``ndim > 1``, or the writer cannot write at chosen rows (no ``write_at``).
            RuntimeError: the writer refuses writes (an :class:`ImmutableDatasetWriter`).

        Examples:
            >>> import torch
            >>> from rl_buffers import LazyTensorStorage, ReplayBuffer
            >>> buffer = ReplayBuffer(storage=LazyTensorStorage(10))
            >>> _ = buffer.extend(torch.arange(5.0))
            >>> buffer[1:3] = torch.zeros(2)
            >>> buffer[-1] = torch.tensor(9.0)
            >>> buffer[:].tolist(), len(buffer)
            ([0.0, 0.0, 0.0, 3.0, 9.0], 5)
        """
        name = f"{type(self).__name__}[...] ="
        if isinstance(index, str) or (isinstance(index, tuple) and index):
            raise TypeError(
                f"{name}: expected positions of whole items, got {index!r}. Read the items "
                f"(buffer[idx]), change the entry and write them back (buffer[idx] = items)."
            )
        write_at = getattr(self._writer, "write_at", None)
        if write_at is None:
            raise TypeError(
                f"{name}: the writer {type(self._writer).__name__} cannot write at chosen "
                f"positions (it has no write_at); use a RoundRobinWriter."
            )
        if self._storage.ndim != 1:
            raise TypeError(
                f"{name}: positions are items, and this storage has ndim="
                f"{self._storage.ndim} (rows of several items); write rows with extend."
            )
        data = self._before_write(data)
        with self._lock:
            positions = self._storage._positions(index)
            rows = write_at(positions, data)
            self._sampler.extend(rows)
            if self._mark_update is not None:
                self._mark_update(rows, storage=self._storage)

    def _before_write(self, data: Any) -> Any:
        if len(self._transforms) and self._transform.has_inverse:
            data = self._transform.inv(data)
        return data

    def add(self, data: Any) -> int:
        """Writes one item; returns its index."""
        data = self._before_write(data)
        with self._lock:
            if self._consuming:
                return int(self._write_consuming(data, 1, single=True))
            row = self._writer.add(data)
            if isinstance(row, Tensor):
                row = int(row)
            if row >= 0 and self._storage.ndim > 1:
                items = self._items_of_rows(torch.tensor([row]), data.unsqueeze(0))
                self._sampler.extend(items.reshape(-1))
            elif row >= 0:
                self._sampler.add(row)
            if row >= 0 and self._mark_update is not None:
                self._mark_update(torch.tensor([row]), storage=self._storage)
        return row

    def extend(self, data: Any) -> Tensor:
        """Writes a batch of items; returns their indices (flat item numbers)."""
        data = self._before_write(data)
        with self._lock:
            if self._consuming:
                return self._write_consuming(data, batch_len(data))
            rows = self._writer.extend(data)
            if self._storage.ndim == 1:
                self._sampler.extend(rows)
                if self._mark_update is not None:
                    self._mark_update(rows, storage=self._storage)
                return rows
            index = self._items_of_rows(rows, data)
            self._sampler.extend(index.reshape(-1))
            if self._mark_update is not None:
                self._mark_update(rows, storage=self._storage)
        return index

    def _write_consuming(self, data: Any, n: int, *, single: bool = False) -> Tensor:
        # TorchRL's order: consumed slots first (oldest-consumed first), then the cursor's
        # rows, skipping the slots just taken; one storage write, which records the new
        # cursor with the data (a reopened LazyMemmapStorage goes on writing there).
        free = self._sampler.pop_consumed(self._storage, n)
        if not free.numel():
            if single:
                row = self._writer.add(data)
                self._sampler.add(row)
                return torch.tensor(row)
            rows = self._writer.extend(data)
            self._sampler.extend(rows)
            return rows
        cursor = None
        if free.numel() < n:
            size = self._storage.rows_for(data)
            taken = set(free.tolist())
            cursor, extra, scanned = self._writer._cursor % size, [], 0
            while len(extra) < n - free.numel():
                if cursor not in taken or scanned >= size:
                    extra.append(cursor)
                cursor, scanned = (cursor + 1) % size, scanned + 1
            free = torch.cat([free, torch.tensor(extra, dtype=torch.long)])
        rows = self._writer.write_at(int(free[0]) if single else free, data, cursor=cursor)
        self._sampler.extend(rows)
        return rows[0] if single else rows

    def _items_of_rows(self, rows: Tensor, data: Any) -> Tensor:
        inner = tuple(data.shape[1 : self._storage.ndim])
        width = 1
        for size in inner:
            width *= size
        return rows.view(-1, *([1] * len(inner))) * width + torch.arange(width).view(inner)

    def _drop_prefetched(self) -> None:
        """Waits for the batches in flight and drops them.

        Called before taking the buffer lock, never under it: a batch in flight needs that
        lock to finish sampling, so waiting for it while holding the lock would deadlock.
        """
        if self._prefetch is not None:
            self._prefetch.clear()
        self.wait_priorities()

    def update_priority(self, index: Any, priority: Tensor | float) -> None:
        """Sets the priorities of items ``index`` (prioritized samplers only)."""
        with self._lock:
            self._sampler.update_priority(self._storage.ravel(index), priority)

    def update_priority_async(self, index: Any, priority: Any) -> Future:
        """Queues a priority update and returns at once (async prioritized writes).

        One background thread applies the queued updates in the order they were queued,
        each as :meth:`update_priority` does: the buffer's lock is held only while the
        sampler's trees are written, so ``sample`` goes on meanwhile (and sees each update
        whole or not at all). ``index`` and ``priority`` may be tensors (priority tensors
        are copied now, so the caller may reuse them), numbers, or
        ``concurrent.futures.Future`` objects giving them (priorities still being
        computed elsewhere: the thread waits for them, the buffer does not).
        ``empty``, ``load_state_dict`` and ``loads`` wait for the queued updates first.

        Returns:
            A future that is done once the update is applied; its ``result()`` raises the
            error :meth:`update_priority` would have raised (a bad index or priority).

        Examples:
            >>> import torch
            >>> from rl_buffers import LazyTensorStorage, PrioritizedReplayBuffer
            >>> rb = PrioritizedReplayBuffer(alpha=1.0, beta=1.0, storage=LazyTensorStorage(4))
            >>> _ = rb.extend(torch.arange(4))
            >>> done = rb.update_priority_async(torch.arange(4), torch.tensor([0.0, 0, 9, 0]))
            >>> done.result()
            >>> rb.sample(3).tolist()
            [2, 2, 2]
        """
        if isinstance(priority, Tensor):
            priority = priority.detach().clone()
        if isinstance(index, Tensor):
            index = index.clone()
        elif isinstance(index, tuple):
            index = tuple(part.clone() if isinstance(part, Tensor) else part for part in index)
        worker = self._priority_worker
        if worker is None:
            with self._lock:
                if self._priority_worker is None:
                    self._priority_worker = ThreadPoolExecutor(
                        max_workers=1, thread_name_prefix="rl_buffers-priorities"
                    )
                worker = self._priority_worker
        return worker.submit(self._apply_priority_update, index, priority)

    def _apply_priority_update(self, index: Any, priority: Any) -> None:
        if isinstance(index, Future):
            index = index.result()
        if isinstance(priority, Future):
            priority = priority.result()
        self.update_priority(index, priority)

    def wait_priorities(self) -> None:
        """Returns once every update queued by :meth:`update_priority_async` is applied."""
        worker = self._priority_worker
        if worker is not None:
            worker.submit(lambda: None).result()

    # ---------------------------------------------------------------- reads
    def _sample_index(self, batch_size: int) -> tuple[Any, dict[str, Any]]:
        with self._lock:
            if not len(self._storage):  # (the message is only built when it is needed)
                check_not_empty(f"{type(self).__name__}.sample", self._storage)
            index, info = self._sampler.sample(self._storage, batch_size)
            info["index"] = self._storage.unravel(index)
            if self._writer.tracks_generations:
                info["index_generation"] = self._writer.generations_of(info["index"])
            data = self._read(index, info)
        return data, info

    def _read(self, index: Tensor, info: dict[str, Any]) -> Any:
        return self._storage.get(index)

    def _sample_batch(self, batch_size: int | None = None) -> tuple[Any, dict[str, Any]]:
        data, info = self._sample_index(batch_size or self._batch_size)
        if self._collate_fn is not None:
            data = self._collate_fn(data)
        data = self._postprocess(data, info)
        if len(self._transforms):
            data = self._transform(data)
        if self._pin_memory:
            data = data.pin_memory()
        return data, info

    def _postprocess(self, data: Any, info: dict[str, Any]) -> Any:
        return data

    def sample(self, batch_size: int | None = None, return_info: bool = False) -> Any:
        """Samples a batch.

        Args:
            batch_size: items to draw; defaults to the buffer's ``batch_size``.
            return_info: also return the info dict (``"index"``, importance weights…).

        Raises:
            RuntimeError: the buffer is empty.
            ValueError: no batch size is known, or it differs from the prefetched one.
        """
        if batch_size is None and self._batch_size is not None and self._prefetch is None:
            # The training loop's call: the buffer's own batch size, checked when it was set.
            data, info = self._sample_batch(self._batch_size)
            return (data, info) if return_info else data
        name = f"{type(self).__name__}.sample"
        if batch_size is None:
            if self._batch_size is None:
                raise ValueError(
                    f"{name}: no batch_size; pass sample(batch_size) or build the buffer "
                    f"with batch_size=."
                )
            batch_size = self._batch_size
        check_batch_size(name, batch_size)
        if self._prefetch is not None:
            if batch_size != self._batch_size:
                raise ValueError(
                    f"{name}: batch_size={batch_size} differs from the prefetched "
                    f"batch_size={self._batch_size}; build the buffer with the size you sample."
                )
            check_not_empty(name, self._storage)
            data, info = self._prefetch.next()
        else:
            data, info = self._sample_batch(batch_size)
        return (data, info) if return_info else data

    def __iter__(self) -> Iterator[Any]:
        """Batches of ``batch_size``: one epoch if the sampler has epochs, else forever."""
        if self._batch_size is None:
            raise ValueError(
                f"{type(self).__name__}: iterating needs a batch_size at construction."
            )
        epochs = self._sampler.supports_epochs
        while True:
            yield self.sample()
            if epochs and self._sampler.ran_out:
                return

    def empty(self) -> None:
        """Removes every item and resets the writer and sampler (the writer first: an
        :class:`ImmutableDatasetWriter` refuses before anything is removed)."""
        self._drop_prefetched()
        with self._lock:
            self._writer._empty()
            self._storage.empty()
            self._sampler._empty()

    # ---------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "storage": self._storage.state_dict(),
                "sampler": self._sampler.state_dict(),
                "writer": self._writer.state_dict(),
                "transform": self._transform.state_dict(),
                "rng": _rng_state(self._rng),
            }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._drop_prefetched()
        with self._lock:
            self._storage.load_state_dict(state_dict["storage"])
            self._sampler.load_state_dict(state_dict["sampler"])
            self._writer.load_state_dict(state_dict["writer"])
            self._transform.load_state_dict(state_dict["transform"])
            if state_dict.get("rng") is not None:
                self.set_rng(_rng_from_state(state_dict["rng"]))

    def dumps(self, path: str | Path) -> None:
        """Saves storage, sampler, writer and transform state under the directory ``path``.

        Each file is written whole and renamed into place; ``buffer.json`` comes last, so a
        directory with it holds a complete checkpoint.
        """
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        with self._lock:
            (path / "buffer.json").unlink(missing_ok=True)
            self._storage.dumps(path / "storage")
            atomic_save(self._sampler.state_dict(), path / "sampler.pt")
            atomic_save(self._writer.state_dict(), path / "writer.pt")
            atomic_save(self._transform.state_dict(), path / "transform.pt")
            (path / "rng.pt").unlink(missing_ok=True)
            if self._rng is not None:
                atomic_save(_rng_state(self._rng), path / "rng.pt")
            parts = [path / f"{name}.pt" for name in ("sampler", "writer", "transform", "rng")]
            atomic_write_json(
                {
                    "type": type(self).__name__,
                    "len": len(self),
                    "files": describe_files(path, parts),  # (the storage lists its own)
                },
                path / "buffer.json",
            )

    def loads(self, path: str | Path) -> None:
        """Restores a checkpoint written by :meth:`dumps`: all of it, or nothing.

        Every file is read and parsed first (the storage's included), then the sampler, the
        writer and the transforms are restored and the storage last; if a part is refused
        there, the parts already restored are put back as they were.

        Raises:
            FileNotFoundError: ``path`` holds no complete checkpoint.
            ValueError: a file of the checkpoint is damaged (the error names it) or does not
                fit this buffer; the buffer is left as it was.
        """
        path = Path(path)
        where = f"{type(self).__name__}.loads"
        meta_file = path / "buffer.json"
        if not meta_file.exists():
            raise FileNotFoundError(
                f"{where}: {path} holds no complete checkpoint (no buffer.json). Pass a "
                f"directory written by dumps()."
            )
        try:
            meta = json.loads(meta_file.read_text())
            expected_len = int(meta["len"])
            files = meta.get("files")  # (a checkpoint of an earlier version lists none)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(
                f"{where}: {meta_file} is damaged ({type(error).__name__}: {error}). Nothing "
                f"was restored."
            ) from error
        if files is not None:
            check_files(where, path, files)
        parts = {
            name: load_file(where, path / f"{name}.pt")
            for name in ("sampler", "writer", "transform")
        }
        rng_file = path / "rng.pt"  # (only when the saved buffer had its own generator)
        rng = _rng_from_state(load_file(where, rng_file)) if rng_file.exists() else None
        storage_saved = self._storage._read_saved(path / "storage")
        self._drop_prefetched()
        with self._lock:
            before = {
                "sampler": self._sampler.state_dict(),
                "writer": self._writer.state_dict(),
                "transform": self._transform.state_dict(),
            }
            owners = {
                "sampler": self._sampler,
                "writer": self._writer,
                "transform": self._transform,
            }
            touched: list[str] = []  # the parts changed so far, the failing one included
            try:
                for name, owner in owners.items():
                    touched.append(name)
                    owner.load_state_dict(parts[name])
                touched.append("storage")
                self._storage._load_saved(storage_saved)
                if rng is not None:
                    self.set_rng(rng)
            except Exception as error:
                for name in touched:
                    if name != "storage":  # (the storage checks the saved data before writing)
                        owners[name].load_state_dict(before[name])
                raise ValueError(
                    f"{where}: the checkpoint at {path} does not fit this buffer (restoring "
                    f"its {touched[-1]} failed: {type(error).__name__}: {error}). Nothing was "
                    f"restored."
                ) from error
        if len(self) != expected_len:
            raise RuntimeError(
                f"{where}: the checkpoint at {path} recorded {expected_len} items but its "
                f"storage holds {len(self)}."
            )

    def __getstate__(self) -> dict[str, Any]:
        self.wait_priorities()
        state = self.__dict__.copy()
        state.pop("_lock")
        state["_priority_worker"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self.__dict__.setdefault("_priority_worker", None)

    def __del__(self) -> None:
        prefetch = self.__dict__.get("_prefetch")
        if prefetch is not None:
            prefetch.shutdown()
        worker = self.__dict__.get("_priority_worker")
        if worker is not None:
            worker.shutdown(wait=False)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(storage={self._storage!r}, sampler={self._sampler!r}, "
            f"writer={self._writer!r}, batch_size={self._batch_size})"
        )


def _rng_state(generator: torch.Generator | None) -> tuple[Tensor, str] | None:
    """A generator's state and device (what TorchRL's buffers keep), or None."""
    if generator is None:
        return None
    return generator.get_state().clone(), str(generator.device)


def _rng_from_state(state: tuple[Tensor, str]) -> torch.Generator:
    generator = torch.Generator(device=state[1])
    generator.set_state(state[0])
    return generator


class _FunctionTransform(Transform):
    """A function of the sampled batch (``TensorDict -> TensorDict``) run as a buffer
    transform, as TorchRL's buffers take one; it has no inverse."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, tensordict: Any) -> Any:
        return self.fn(tensordict)


def _checked_transform(where: str, transform: Any) -> Transform:
    if isinstance(transform, Transform):
        return transform
    if callable(transform):
        return _FunctionTransform(transform)
    raise TypeError(
        f"{where}: expected an rl-core Transform or a function of the sampled batch, got "
        f"{type(transform).__name__}."
    )


def _consuming_sampler(
    name: str, sampler: Sampler | None, consume_after_n_samples: int | None
) -> Sampler:
    """The buffer's sampler: ``sampler`` (default ``RandomSampler``), or the
    ``ConsumingSampler`` TorchRL builds for ``consume_after_n_samples``."""
    if consume_after_n_samples is None:
        return sampler if sampler is not None else RandomSampler()
    if (
        isinstance(consume_after_n_samples, bool)
        or not isinstance(consume_after_n_samples, int)
        or consume_after_n_samples < 1
    ):
        raise ValueError(
            f"{name}: expected consume_after_n_samples to be a positive int or None, got "
            f"{consume_after_n_samples!r}."
        )
    if isinstance(sampler, ConsumingSampler):
        if sampler.max_sample_count != consume_after_n_samples:
            raise ValueError(
                f"{name}: consume_after_n_samples={consume_after_n_samples} disagrees with the "
                f"sampler's max_sample_count={sampler.max_sample_count}. Pass one of them."
            )
        return sampler
    if sampler is not None and type(sampler) is not RandomSampler:
        raise ValueError(
            f"{name}: consume_after_n_samples works with the default RandomSampler or a "
            f"ConsumingSampler, got {type(sampler).__name__}."
        )
    return ConsumingSampler(max_sample_count=consume_after_n_samples)


def _check_consuming(name: str, storage: Storage, writer: Writer, prefetch: int | None) -> None:
    """Raises where TorchRL 0.14 refuses a ConsumingSampler's setting."""
    if prefetch:
        raise ValueError(
            f"{name}: a ConsumingSampler does not work with prefetch={prefetch} (batches "
            f"sampled ahead would consume items early). Pass prefetch=None."
        )
    if storage.ndim != 1:
        raise ValueError(
            f"{name}: a ConsumingSampler needs a 1-D storage, got ndim={storage.ndim}."
        )
    if not isinstance(storage, TensorStorage | ListStorage):
        raise TypeError(
            f"{name}: a ConsumingSampler needs a ListStorage, TensorStorage, "
            f"LazyTensorStorage or LazyMemmapStorage, got {type(storage).__name__}."
        )
    if not callable(getattr(writer, "write_at", None)):
        raise TypeError(
            f"{name}: a ConsumingSampler needs a writer with write_at(index, data) (it fills "
            f"consumed slots first), got {type(writer).__name__}. Use RoundRobinWriter."
        )
