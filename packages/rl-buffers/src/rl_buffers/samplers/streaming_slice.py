"""StreamingSliceSampler: each newly completed window once, then uniform slices."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from rl_buffers.samplers._trajectories import Trajectories, find_trajectories
from rl_buffers.samplers.sampler import check_not_empty
from rl_buffers.samplers.slice import _DEFAULT_END_KEY, _DEFAULT_TRAJ_KEY, SliceSampler
from rl_buffers.storages.storage import Storage

__all__ = ["StreamingSliceSampler"]

_INIT_KEY = "is_init"


class StreamingSliceSampler(SliceSampler):
    """Returns each newly completed ``slice_len`` window once, oldest first, before falling
    back to uniform :class:`SliceSampler` slices.

    Every write is cut, in write order, into non-overlapping windows of ``slice_len`` items
    that never cross a trajectory boundary; a window left incomplete at the end of a write is
    completed by the next write of the same trajectory. A boundary falls before an item whose
    ``"is_init"`` is True, after an item flagged by the end key(s), and where the trajectory
    id changes. Items left over at the end of a trajectory (fewer than ``slice_len``) are not
    queued. Each completed window is queued once; ``sample`` returns queued windows first
    and fills the rest of the batch with uniform slices (as :class:`SliceSampler` draws
    them). Each slot carries a write count: a queued window one of whose slots was written
    again before it was sampled is dropped, so queued windows never mix old and new items.
    The queue holds at most ``max_size // slice_len`` windows (the oldest go first).

    The buffer reports each write through :meth:`mark_update` (after the write, with the
    storage), as TorchRL's buffers do. For 1-D tensor storages of TensorDicts written in
    chronological order (one buffer per environment stream).

    Keyword Args:
        slice_len: items of every queued and sampled slice; ``batch_size`` must be a
            multiple of it.
        end_key: entry flagging the last item of each trajectory. With no key given,
            ``("next", "done")`` is read where present.
        end_keys: several such entries, combined with a logical OR. Exclusive with
            ``end_key``.
        traj_key: entry holding a trajectory id per item. With no key given, ``"episode"``
            is used if the items have it (as :class:`SliceSampler` does).
        cache_values: keep the fallback's trajectory split between writes. Defaults to
            False.
        truncated_key: the info entry marking the last item of each slice. Defaults to
            ``("next", "truncated")``.
        strict_length: whether the uniform fallback skips trajectories shorter than
            ``slice_len``. Defaults to True.
        pad_output, compile, span, use_gpu: TorchRL's options, not built here: only their
            defaults (False) are accepted.

    Raises:
        TypeError: ``slice_len`` is not an int; (at writes) the storage is not a 1-D tensor
            storage of TensorDicts.
        ValueError: ``slice_len`` below 1, ``end_key`` with ``end_keys``, a trajectory key
            with an end key, an empty ``end_keys``; (at writes) a storage smaller than
            ``slice_len``; (at sampling) ``batch_size`` not a multiple of ``slice_len``.
        NotImplementedError: ``pad_output``, ``compile``, ``span`` or ``use_gpu`` not False.
        KeyError: (at writes) the items lack a key that was given explicitly.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, StreamingSliceSampler, TensorDictReplayBuffer
        >>> rb = TensorDictReplayBuffer(
        ...     storage=LazyTensorStorage(16), sampler=StreamingSliceSampler(slice_len=3), batch_size=6
        ... )
        >>> done = torch.zeros(6, 1, dtype=torch.bool)
        >>> _ = rb.extend(TensorDict({"value": torch.arange(6), ("next", "done"): done}, [6]))
        >>> rb.sample()["value"].reshape(2, 3)
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """

    def __init__(
        self,
        *,
        slice_len: int,
        end_key: Any = None,
        end_keys: Sequence[Any] | None = None,
        traj_key: Any = None,
        cache_values: bool = False,
        truncated_key: Any = ("next", "truncated"),
        strict_length: bool = True,
        pad_output: bool = False,
        compile: bool | dict = False,
        span: bool | int | tuple = False,
        use_gpu: torch.device | bool = False,
    ) -> None:
        name = "StreamingSliceSampler"
        if isinstance(slice_len, bool) or not isinstance(slice_len, int):
            raise TypeError(
                f"{name}: expected slice_len to be a positive int, got {slice_len!r} "
                f"({type(slice_len).__name__})."
            )
        if slice_len < 1:
            raise ValueError(f"{name}: expected slice_len to be a positive int, got {slice_len}.")
        if end_keys is not None:
            if end_key is not None:
                raise ValueError(
                    f"{name}: expected end_key or end_keys, not both, got end_key={end_key!r} "
                    f"and end_keys={end_keys!r}."
                )
            if isinstance(end_keys, str) or not isinstance(end_keys, (list, tuple)) or not end_keys:
                raise ValueError(
                    f"{name}: expected end_keys to be a non-empty list of keys, got {end_keys!r}."
                )
            if traj_key is not None:
                raise ValueError(f"{name}: expected end_keys or traj_key, not both.")
            end_keys = tuple(end_keys)
        if end_key is not None and traj_key is not None:
            raise ValueError(f"{name}: expected end_key or traj_key, not both.")
        for option, value in (
            ("pad_output", pad_output),
            ("compile", compile),
            ("span", span),
            ("use_gpu", use_gpu),
        ):
            if value is not False:
                raise NotImplementedError(
                    f"{name}: {option}= is not built in rl_buffers; expected {option}=False, "
                    f"got {value!r}."
                )
        super().__init__(
            slice_len=slice_len,
            end_key=end_key,
            traj_key=traj_key,
            strict_length=strict_length,
            cache_values=cache_values,
            truncated_key=truncated_key,
        )
        self.end_keys = end_keys
        self.pad_output = pad_output
        self.compile = compile  # (span=False is the base's (False, False))
        self.use_gpu = use_gpu
        self._reset_stream()

    def _reset_stream(self) -> None:
        self._queue: deque[tuple[Tensor, Tensor]] = deque()
        self._pending = torch.empty(0, dtype=torch.long)
        self._pending_stamps = torch.empty(0, dtype=torch.long)
        self._stamps = torch.empty(0, dtype=torch.long)
        self._last_traj: Tensor | None = None
        self._last_done = False

    @property
    def num_queued(self) -> int:
        """Windows queued (some may have been overwritten since; they are skipped)."""
        return len(self._queue)

    # ---------------------------------------------------------------- writes
    def _column(self, storage: Storage, key: Any, rows: Tensor, required: bool) -> Tensor | None:
        try:
            column = storage.column(key)
        except KeyError:
            if required:
                raise KeyError(
                    f"StreamingSliceSampler.mark_update: expected the written items to hold "
                    f"the entry {key!r}, got items without it."
                ) from None
            return None
        return column[rows.to(column.device)].reshape(rows.numel(), -1).cpu()

    def mark_update(self, index: Tensor | int, *, storage: Storage | None = None) -> None:
        """Reads the items just written at ``index`` (in write order) and queues the windows
        they complete. The replay buffer calls it after each write; without a storage it
        does nothing."""
        if storage is None:
            return
        where = "StreamingSliceSampler.mark_update"
        if getattr(storage, "ndim", 1) != 1 or not callable(getattr(storage, "column", None)):
            raise TypeError(
                f"{where}: expected a 1-D tensor storage of TensorDicts, got "
                f"{type(storage).__name__} (ndim={getattr(storage, 'ndim', 1)})."
            )
        capacity = storage.max_size
        length = self.slice_len
        if capacity < length:
            raise ValueError(
                f"{where}: expected a storage of at least slice_len={length} items, got "
                f"max_size={capacity}."
            )
        rows = torch.as_tensor(index, dtype=torch.long).reshape(-1).cpu().clone()
        if not rows.numel():
            return
        if rows.numel() > capacity:  # the earlier ones were overwritten by this same write
            rows = rows[-capacity:]
        if self._stamps.numel() < capacity:
            grown = torch.zeros(capacity, dtype=torch.long)
            grown[: self._stamps.numel()] = self._stamps
            self._stamps = grown
        if rows.unique().numel() == rows.numel():
            stamps = self._stamps[rows] + 1
            self._stamps[rows] = stamps
        else:
            stamps = torch.empty_like(rows)
            for position, row in enumerate(rows.tolist()):
                self._stamps[row] += 1
                stamps[position] = self._stamps[row]
        if self._pending.numel() and not torch.equal(
            self._stamps[self._pending], self._pending_stamps
        ):
            self._pending = torch.empty(0, dtype=torch.long)  # overwritten before completed
            self._pending_stamps = torch.empty(0, dtype=torch.long)

        n = rows.numel()
        explicit_end = self.end_keys or ((self.end_key,) if self.end_key is not None else ())
        done = torch.zeros(n, dtype=torch.bool)
        for key in explicit_end or (_DEFAULT_END_KEY,):
            flags = self._column(storage, key, rows, required=bool(explicit_end))
            if flags is not None:
                done |= flags.bool().any(-1)
        init = self._column(storage, _INIT_KEY, rows, required=False)
        boundary = init.bool().any(-1) if init is not None else torch.zeros(n, dtype=torch.bool)
        traj = None
        if self.traj_key is not None:
            traj = self._column(storage, self.traj_key, rows, required=True)
        elif not explicit_end:
            traj = self._column(storage, _DEFAULT_TRAJ_KEY, rows, required=False)
        boundary[1:] |= done[:-1]
        if traj is not None:
            boundary[1:] |= (traj[1:] != traj[:-1]).any(-1)
            last = self._last_traj
            if last is not None and (last.shape != traj[0].shape or bool((last != traj[0]).any())):
                boundary[0] = True
        if self._last_done:
            boundary[0] = True

        if self._pending.numel() and not bool(boundary[0]):
            offset = self._pending.numel()
            seq = torch.cat([self._pending, rows])
            seq_stamps = torch.cat([self._pending_stamps, stamps])
        else:
            offset = 0
            seq, seq_stamps = rows, stamps
        starts = torch.cat([torch.zeros(1, dtype=torch.long), boundary.nonzero().view(-1) + offset])
        starts = starts.unique(sorted=True).tolist()
        stops = [*starts[1:], seq.numel()]
        self._pending = torch.empty(0, dtype=torch.long)
        self._pending_stamps = torch.empty(0, dtype=torch.long)
        for start, stop in zip(starts, stops, strict=True):
            full = (stop - start) // length * length
            if full:
                windows = seq[start : start + full].view(-1, length)
                window_stamps = seq_stamps[start : start + full].view(-1, length)
                self._queue.extend(zip(windows.unbind(0), window_stamps.unbind(0), strict=True))
        tail_start = starts[-1] + (seq.numel() - starts[-1]) // length * length
        if tail_start < seq.numel() and not bool(done[-1]):
            self._pending = seq[tail_start:].clone()
            self._pending_stamps = seq_stamps[tail_start:].clone()
        # Windows are disjoint: beyond max_size // slice_len the oldest were overwritten.
        while len(self._queue) > capacity // length:
            self._queue.popleft()
        self._last_traj = traj[-1].clone() if traj is not None else None
        self._last_done = bool(done[-1])

    def _empty(self) -> None:
        super()._empty()
        self._reset_stream()

    # ---------------------------------------------------------------- fallback
    def trajectories(self, storage: Storage) -> Trajectories:
        """The stored trajectories in write order, for the uniform fallback."""
        if self.end_keys is None:
            return super().trajectories(storage)
        if self._cache is not None:
            return self._cache
        where = "StreamingSliceSampler.sample"
        if getattr(storage, "ndim", 1) != 1 or not callable(getattr(storage, "column", None)):
            raise TypeError(
                f"{where}: expected a TensorStorage of TensorDicts with ndim=1, got "
                f"{type(storage).__name__} (ndim={getattr(storage, 'ndim', 1)})."
            )
        flags = [storage.column(key) for key in self.end_keys]
        n = flags[0].shape[0]
        ends = torch.zeros(n, dtype=torch.bool, device=flags[0].device)
        for column in flags:
            ends |= column.reshape(n, -1).bool().any(-1)
        oldest = storage.next_row % n if n == storage.max_size else 0
        trajs = find_trajectories(ends, is_end_flag=True, oldest=oldest, where=where)
        if self.cache_values:
            self._cache = trajs
        return trajs

    # ---------------------------------------------------------------- sampling
    def sample(self, storage: Storage, batch_size: int) -> tuple[Tensor, dict[str, Any]]:
        check_not_empty("StreamingSliceSampler.sample", storage)
        num_slices, length = self._shape(batch_size)
        fresh = []
        while self._queue and len(fresh) < num_slices:
            window, stamps = self._queue.popleft()
            if torch.equal(self._stamps[window], stamps):
                fresh.append(window)
        if not fresh:
            return super().sample(storage, batch_size)
        index = torch.cat(fresh)
        truncated = torch.zeros(len(fresh), length, dtype=torch.bool)
        truncated[:, -1] = True
        truncated = truncated.reshape(-1, 1)
        if len(fresh) < num_slices:
            rest, info = super().sample(storage, (num_slices - len(fresh)) * length)
            index = torch.cat([index, rest.to(index.device)])
            truncated = torch.cat([truncated, info[self.truncated_key].to(truncated.device)])
        return index, {self.truncated_key: truncated}

    # ---------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        length = self.slice_len
        if self._queue:
            windows = torch.stack([window for window, _ in self._queue])
            stamps = torch.stack([stamp for _, stamp in self._queue])
        else:
            windows = stamps = torch.empty(0, length, dtype=torch.long)
        return {
            "slice_len": length,
            "stamps": self._stamps.clone(),
            "queued": windows,
            "queued_stamps": stamps,
            "pending": self._pending.clone(),
            "pending_stamps": self._pending_stamps.clone(),
            "last_traj": None if self._last_traj is None else self._last_traj.clone(),
            "last_done": self._last_done,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if int(state_dict["slice_len"]) != self.slice_len:
            raise ValueError(
                f"StreamingSliceSampler.load_state_dict: expected a state saved with "
                f"slice_len={self.slice_len}, got slice_len={int(state_dict['slice_len'])}."
            )
        super().load_state_dict(state_dict)
        self._stamps = state_dict["stamps"].clone()
        self._queue = deque(
            zip(
                state_dict["queued"].clone().unbind(0),
                state_dict["queued_stamps"].clone().unbind(0),
                strict=True,
            )
        )
        self._pending = state_dict["pending"].clone()
        self._pending_stamps = state_dict["pending_stamps"].clone()
        last = state_dict["last_traj"]
        self._last_traj = None if last is None else last.clone()
        self._last_done = bool(state_dict["last_done"])

    def __repr__(self) -> str:
        return (
            f"StreamingSliceSampler(slice_len={self.slice_len}, strict_length="
            f"{self.strict_length}, queued={len(self._queue)})"
        )
