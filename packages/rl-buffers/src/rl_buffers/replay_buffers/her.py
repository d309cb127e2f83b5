"""HERReplayBuffer: hindsight experience replay, goals relabelled when a batch is sampled.

Andrychowicz et al., "Hindsight Experience Replay", NeurIPS 2017: a transition stored with
the goal the agent failed to reach is also replayed with a goal it did reach, and its
reward is recomputed for that goal.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import Tensor

from rl_buffers.replay_buffers.tensordict_buffer import TensorDictReplayBuffer
from rl_buffers.samplers._trajectories import Trajectories, find_trajectories
from rl_buffers.samplers.random import RandomSampler
from rl_buffers.samplers.sampler import Sampler
from rl_buffers.storages.tensor_storage import TensorStorage

__all__ = ["HERReplayBuffer", "HindsightStrategy"]


class HindsightStrategy(enum.StrEnum):
    """Where :class:`HERReplayBuffer` takes a relabelled transition's goal from.

    Transition ``t`` of an episode whose last transition is ``T``; the goal is the achieved
    goal after transition ``t'``:

    * ``FUTURE`` (``"future"``): ``t'`` uniform in ``[t, T]``.
    * ``FINAL`` (``"final"``): ``t' = T``.
    * ``EPISODE`` (``"episode"``): ``t'`` uniform over the whole episode.
    * ``RANDOM`` (``"random"``): any stored transition, uniformly.

    Examples:
        >>> from rl_buffers import HindsightStrategy
        >>> HindsightStrategy("final") is HindsightStrategy.FINAL
        True
    """

    FUTURE = "future"
    FINAL = "final"
    EPISODE = "episode"
    RANDOM = "random"


class HERReplayBuffer(TensorDictReplayBuffer):
    """A :class:`TensorDictReplayBuffer` that relabels goals in the batches it samples.

    The first ``int(batch_size * her_ratio)`` items of each batch get a new ``goal_key``
    (and ``("next", goal_key)`` when the items hold it): an achieved goal of the same
    episode chosen by ``strategy`` (see :class:`HindsightStrategy`), and a new
    ``reward_key`` computed by ``reward_fn`` on those relabelled items. The other items
    keep their stored goal and reward; the storage is never changed.

    The achieved goal of transition ``t'`` is its ``("next", achieved_goal_key)`` when the
    items hold it (the state the transition reached, as in the paper), else its
    ``achieved_goal_key``. TorchRL's buffer reads ``achieved_goal_key`` only, one state
    earlier. Episodes end at items whose ``end_key`` is True (or, when the items lack
    ``end_key``, its ``"terminated"`` sibling); the newest item ends one too, and once the
    storage has wrapped around the oldest item starts one, so no goal comes from another
    episode.

    Args:
        reward_fn: maps the relabelled items (a TensorDict of batch ``[n]``) to their
            rewards, shaped ``[n]`` or as the stored ``reward_key`` entry (``[n, 1]``).
        her_ratio: the fraction of each batch to relabel, in ``[0, 1]``. Defaults to 0.8.
        strategy: a :class:`HindsightStrategy` or its value. Defaults to ``"future"``.
        goal_key: the desired goal. Defaults to ``"desired_goal"``.
        achieved_goal_key: the achieved goal. Defaults to ``"achieved_goal"``.
        reward_key: where the reward is written. Defaults to ``("next", "reward")``.
        end_key: the end-of-episode flag. Defaults to ``("next", "done")``.
        sampler: draws the batch's items. Defaults to :class:`RandomSampler`.
        **kwargs: as :class:`TensorDictReplayBuffer`; the storage must be a 1-D
            :class:`TensorStorage` (``LazyTensorStorage``, ``LazyMemmapStorage``).

    Raises:
        TypeError: ``reward_fn`` is not callable, or the storage is not a 1-D
            ``TensorStorage``.
        ValueError: ``her_ratio`` is outside ``[0, 1]`` or ``strategy`` is unknown.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import HERReplayBuffer, LazyTensorStorage
        >>> def reward_fn(td):
        ...     hit = (td["next", "achieved_goal"] == td["desired_goal"]).all(-1)
        ...     return hit.float() - 1
        >>> buffer = HERReplayBuffer(reward_fn, strategy="final", her_ratio=1.0,
        ...                          storage=LazyTensorStorage(100), batch_size=4)
        >>> episode = TensorDict({
        ...     "desired_goal": torch.full((3, 2), 9.0),
        ...     "achieved_goal": torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]),
        ...     "next": {"achieved_goal": torch.tensor([[1.0, 0.0], [1.0, 1.0], [2.0, 1.0]]),
        ...              "reward": -torch.ones(3, 1),
        ...              "done": torch.tensor([[False], [False], [True]])}}, [3])
        >>> _ = buffer.extend(episode)
        >>> batch = buffer.sample()
        >>> batch["desired_goal"][0].tolist(), batch["next", "reward"].shape
        ([2.0, 1.0], torch.Size([4, 1]))
    """

    def __init__(
        self,
        reward_fn: Callable[[TensorDictBase], Tensor],
        *,
        her_ratio: float = 0.8,
        strategy: HindsightStrategy | str = "future",
        goal_key: Any = "desired_goal",
        achieved_goal_key: Any = "achieved_goal",
        reward_key: Any = ("next", "reward"),
        end_key: Any = ("next", "done"),
        sampler: Sampler | None = None,
        **kwargs: Any,
    ) -> None:
        name = type(self).__name__
        if not callable(reward_fn):
            raise TypeError(
                f"{name}: expected reward_fn to be a callable mapping the relabelled "
                f"TensorDict to rewards, got {type(reward_fn).__name__}."
            )
        if (
            isinstance(her_ratio, bool)
            or not isinstance(her_ratio, (int, float))
            or not 0.0 <= her_ratio <= 1.0
        ):
            raise ValueError(f"{name}: expected her_ratio in [0, 1], got {her_ratio!r}.")
        try:
            strategy = HindsightStrategy(strategy)
        except ValueError:
            raise ValueError(
                f"{name}: expected strategy in {[s.value for s in HindsightStrategy]}, "
                f"got {strategy!r}."
            ) from None
        super().__init__(sampler=RandomSampler() if sampler is None else sampler, **kwargs)
        storage = self._storage
        if not isinstance(storage, TensorStorage) or storage.ndim != 1:
            raise TypeError(
                f"{name}: expected a TensorStorage with ndim=1 (LazyTensorStorage, "
                f"LazyMemmapStorage), got {type(storage).__name__} "
                f"(ndim={getattr(storage, 'ndim', 1)})."
            )
        self.reward_fn = reward_fn
        self.her_ratio = float(her_ratio)
        self.strategy = strategy
        self.goal_key = goal_key
        self.achieved_goal_key = achieved_goal_key
        self.reward_key = reward_key
        self.end_key = end_key

    # ---------------------------------------------------------------- helpers
    @staticmethod
    def _path(key: Any) -> tuple[str, ...]:
        return key if isinstance(key, tuple) else (key,)

    def _column(self, key: Any) -> Tensor | None:
        try:
            return self._storage.column(key)
        except KeyError:
            return None

    def _trajectories(self) -> Trajectories:
        where = f"{type(self).__name__}.sample"
        storage = self._storage
        end = self._path(self.end_key)
        column = self._column(end)
        if column is None:
            column = self._column((*end[:-1], "terminated"))
        if column is None:
            raise KeyError(
                f"{where}: the stored items have neither {self.end_key!r} nor "
                f"{(*end[:-1], 'terminated')!r}; store the end-of-episode flag or pass "
                f"end_key=."
            )
        n = column.shape[0]
        oldest = storage.next_row % n if n == storage.max_size else 0
        return find_trajectories(column.bool(), is_end_flag=True, oldest=oldest, where=where)

    def _goal_positions(self, trajs: Trajectories, items: Tensor) -> Tensor:
        """Physical positions of the goals' source transitions for ``items``."""
        generator = self._sampler._rng
        strategy = self.strategy
        count = items.shape[0]
        if strategy is HindsightStrategy.RANDOM:
            return torch.randint(trajs.n, (count,), generator=generator)
        logical = trajs.logical(items)
        which = torch.searchsorted(trajs.start, logical, right=True) - 1
        first = trajs.start[which]
        last = first + trajs.length[which] - 1
        if strategy is HindsightStrategy.FINAL:
            chosen = last
        else:
            low = logical if strategy is HindsightStrategy.FUTURE else first
            span = last - low + 1
            draw = torch.rand(count, generator=generator, dtype=torch.float64)
            chosen = low + (draw * span).long().clamp_max(span - 1)
        return trajs.physical(chosen)

    # ---------------------------------------------------------------- reads
    def _read(self, index: Tensor, info: dict[str, Any]) -> Any:
        data = super()._read(index, info)
        count = int(index.shape[0] * self.her_ratio)
        if count == 0:
            return data
        where = f"{type(self).__name__}.sample"
        goal_path = self._path(self.goal_key)
        achieved = self._path(self.achieved_goal_key)
        source_key: Any = ("next", *achieved)
        source = self._column(source_key)
        if source is None:
            source_key, source = self.achieved_goal_key, self._column(achieved)
        keys = data.keys(True, True)
        if source is None or goal_path not in {self._path(k) for k in keys}:
            raise KeyError(
                f"{where}: expected the stored items to hold goal_key={self.goal_key!r} and "
                f"achieved_goal_key={self.achieved_goal_key!r} (or ('next', "
                f"{self.achieved_goal_key!r})); pass the keys your items use."
            )
        goal = data.get(self.goal_key)
        next_goal = ("next", *goal_path)
        targets = [(self.goal_key, goal)]
        if next_goal in {self._path(k) for k in keys}:
            targets.append((next_goal, data.get(next_goal)))
        for key, entry in targets:  # (a goal is copied into them: same per-item shape)
            if entry.shape[1:] != source.shape[1:]:
                raise ValueError(
                    f"{where}: the desired goal {key!r} has per-item shape "
                    f"{tuple(entry.shape[1:])} but the achieved goal {source_key!r} has "
                    f"{tuple(source.shape[1:])}; relabelling copies achieved goals into the "
                    f"desired goal. Store both with the same shape, or pass goal_key= and "
                    f"achieved_goal_key= of matching entries."
                )
        items = index[:count].to(torch.long).cpu()
        goals = source[self._goal_positions(self._trajectories(), items)]
        for _, entry in targets:
            entry[:count] = goals.to(entry.device, entry.dtype)
        reward = self.reward_fn(data[:count])
        stored = data.get(self.reward_key, None)
        self._check_reward(where, reward, count, stored)
        if stored is None:
            data.set(self.reward_key, torch.zeros((index.shape[0], *reward.shape[1:])).to(reward))
            stored = data.get(self.reward_key)
        stored[:count] = reward.reshape(stored[:count].shape).to(stored.dtype)
        return data

    def _check_reward(self, where: str, reward: Any, count: int, stored: Tensor | None) -> None:
        """Raises unless ``reward_fn``'s output holds one reward per relabelled item, shaped
        ``[count]`` or as the stored ``reward_key`` entry (``[count, *item_shape]``)."""
        item = tuple(stored.shape[1:]) if stored is not None else None
        if isinstance(reward, Tensor):
            got = tuple(reward.shape)
            if got[:1] == (count,) and (
                item is None
                or got[1:] == item
                or math.prod(got[1:]) == math.prod(item) == 1  # ([n] for [n, 1] and back)
            ):
                return
        else:
            got = type(reward).__name__
        shapes = f"[{count}]" + ("" if item is None else f" or {[count, *item]}")
        raise ValueError(
            f"{where}: expected reward_fn to return a tensor of {count} rewards, one per "
            f"relabelled item, shaped {shapes}"
            + ("" if item is None else f" (as the stored {self.reward_key!r})")
            + f", got {got}. Return one reward per item of the TensorDict reward_fn is given."
        )
