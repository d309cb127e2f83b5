"""MCAdvantageSelector: which responses of an oversampled group are kept for the update."""

from __future__ import annotations

from itertools import combinations
from math import comb

import torch
from tensordict import TensorDictBase

from rl_core.keys import NestedKey

_STRATEGIES = ("first", "uniform", "balanced")


def _mean_inside(values: list[float], indices: list[int], bounds: tuple[float, float] | None):
    if bounds is None:
        return True
    mean = sum(values[i] for i in indices) / len(indices)
    return bounds[0] < mean < bounds[1]


def _spread_indices(values: list[float], group_size: int) -> list[int]:
    """``group_size`` candidates at evenly spaced ranks of the returns, lowest to highest."""
    ranked = sorted(range(len(values)), key=lambda i: (values[i], i))
    if group_size == 1:
        return [ranked[len(ranked) // 2]]
    top = len(ranked) - 1
    return [ranked[round(k * top / (group_size - 1))] for k in range(group_size)]


class MCAdvantageSelector:
    """Chooses ``group_size`` of a prompt's candidate responses (DAPO's dynamic sampling).

    :class:`MCAdvantage` with ``candidate_group_size > grpo_size`` samples more responses per
    prompt than one group holds; the selector picks the group. With ``keep_return_bounds``
    (``(low, high)``), a group is kept only if its mean return lies strictly inside: with 0/1
    rewards, ``(0, 1)`` drops groups whose responses are all right or all wrong (they carry
    no advantage), as DAPO's dynamic sampling does.

    Strategies:

    - ``"first"``: the first ``group_size`` candidates;
    - ``"uniform"``: candidates at evenly spaced ranks of their returns;
    - ``"balanced"`` (default): of the subsets whose mean return is inside the bounds, the one
      whose mean is closest to the middle of the bounds, then the widest spread of returns,
      then the first in lexicographic order of indices; all subsets are scored when there are
      at most ``max_combinations``, else a greedy search starts from ``"uniform"`` and swaps
      its lowest (highest) candidate for the highest (lowest) unused one until the mean is
      inside. Without bounds it is ``"uniform"``.

    Args:
        strategy: ``"first"``, ``"uniform"`` or ``"balanced"``.
        max_combinations: the most subsets ``"balanced"`` scores exhaustively.
        in_keys: the candidate entries read; the first holds one return per candidate.

    Raises:
        ValueError: an unknown strategy, ``max_combinations < 1`` or empty ``in_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.objectives import MCAdvantageSelector
        >>> candidates = TensorDict({"return": torch.tensor([0.0, 0.0, 0.0, 1.0])}, [4])
        >>> MCAdvantageSelector().select(candidates, group_size=2, keep_return_bounds=(0, 1))
        [0, 3]
        >>> print(MCAdvantageSelector("first").select(candidates, group_size=2,
        ...     keep_return_bounds=(0, 1)))
        None
    """

    def __init__(
        self,
        strategy: str = "balanced",
        *,
        max_combinations: int = 100_000,
        in_keys: list[NestedKey] | None = None,
    ) -> None:
        if strategy not in _STRATEGIES:
            raise ValueError(
                f"MCAdvantageSelector: expected strategy in {_STRATEGIES}, got {strategy!r}."
            )
        if max_combinations < 1:
            raise ValueError(
                f"MCAdvantageSelector: expected max_combinations >= 1, got {max_combinations}."
            )
        if in_keys is not None and not in_keys:
            raise ValueError("MCAdvantageSelector: expected at least one in_key, got [].")
        self.strategy = strategy
        self.max_combinations = int(max_combinations)
        self.in_keys = list(in_keys) if in_keys is not None else ["return"]

    def select(
        self,
        candidates: TensorDictBase,
        *,
        group_size: int,
        keep_return_bounds: tuple[float, float] | None = None,
    ) -> list[int] | None:
        """The indices of the selected candidates, or ``None`` to drop the group.

        Args:
            candidates: a 1-d TensorDict, one row per candidate, with one return per row
                under ``in_keys[0]``.
            group_size: how many to select.
            keep_return_bounds: the exclusive interval the selected mean return must lie in.

        Raises:
            ValueError: fewer candidates than ``group_size``, or not one return per candidate.
        """
        key = self.in_keys[0]
        returns = candidates.get(key, None)
        count = candidates.numel()
        if returns is None or returns.numel() != count:
            got = "nothing" if returns is None else f"shape {tuple(returns.shape)}"
            raise ValueError(
                f"MCAdvantageSelector.select: expected one return per candidate at {key!r} "
                f"({count} candidates), got {got}."
            )
        if count < group_size:
            raise ValueError(
                f"MCAdvantageSelector.select: expected at least group_size={group_size} "
                f"candidates, got {count}."
            )
        values = [float(v) for v in returns.detach().reshape(-1).to(torch.float64)]
        if count == group_size or self.strategy == "first":
            chosen = list(range(group_size))
        elif self.strategy == "uniform" or keep_return_bounds is None:
            chosen = _spread_indices(values, group_size)
        else:
            return self._balanced(values, group_size, keep_return_bounds)
        return chosen if _mean_inside(values, chosen, keep_return_bounds) else None

    def _balanced(
        self, values: list[float], group_size: int, bounds: tuple[float, float]
    ) -> list[int] | None:
        low, high = bounds
        middle = (low + high) / 2
        if comb(len(values), group_size) <= self.max_combinations:
            best, best_score = None, None
            for subset in combinations(range(len(values)), group_size):
                picked = [values[i] for i in subset]
                mean = sum(picked) / group_size
                if not low < mean < high:
                    continue
                score = (abs(mean - middle), -(max(picked) - min(picked)))
                if best_score is None or score < best_score:
                    best, best_score = list(subset), score
            return best
        chosen = _spread_indices(values, group_size)
        ranked = sorted(range(len(values)), key=lambda i: (values[i], i))
        raise_mean = sum(values[i] for i in chosen) / group_size <= low
        unused = [i for i in (reversed(ranked) if raise_mean else ranked) if i not in chosen]
        for new in unused:
            if _mean_inside(values, chosen, bounds):
                return chosen
            old = (min if raise_mean else max)(chosen, key=lambda i: (values[i], i))
            chosen[chosen.index(old)] = new
        return chosen if _mean_inside(values, chosen, bounds) else None
