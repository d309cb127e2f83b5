"""Selection scores of Monte Carlo tree search: UCT, UCB1-Tuned, PUCT and EXP3.

Each rule is a pure tensor function (the test oracle) behind a thin TensorDict module that
reads its inputs from a node's entries and writes the score under ``score_key``. Shapes:
per-action entries are ``(..., num_actions)``; the parent's visit count ``total_visits`` is a
scalar, ``(...)`` or ``(..., 1)`` and broadcasts against them.
"""

from __future__ import annotations

import functools
import math
from abc import abstractmethod
from enum import Enum, member

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase

_UNVISITED = math.inf


def _parent_visits(total_visits: torch.Tensor, visits: torch.Tensor) -> torch.Tensor:
    """``total_visits`` broadcast against the per-action ``visits``: ``(...)`` gains a last dim."""
    if 0 < total_visits.ndim < visits.ndim:
        return total_visits.unsqueeze(-1)
    return total_visits


def _check_constant(where: str, name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{where}: expected {name} to be a float, got {type(value).__name__}.")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: expected {name} to be a finite float >= 0, got {value!r}.")
    return float(value)


def ucb_score(
    win_count: torch.Tensor, visits: torch.Tensor, total_visits: torch.Tensor, c: float
) -> torch.Tensor:
    """UCT's bound (Kocsis & Szepesvari 2006; UCB1 of Auer et al. 2002 with ``c = sqrt(2)``).

    ``score = win_count / visits + c * sqrt(ln(total_visits) / visits)``; an action never
    visited scores ``+inf``, so every action is tried once before any is tried twice.

    Args:
        win_count: ``(..., A)`` sum of the returns seen after each action.
        visits: ``(..., A)`` visit count of each action.
        total_visits: the parent's visit count, scalar, ``(...)`` or ``(..., 1)``.
        c: the exploration constant.

    Returns:
        ``(..., A)`` scores, in the dtype of ``win_count / visits``.

    Examples:
        >>> import torch
        >>> s = ucb_score(torch.tensor([1.0, 3.0, 0.0]), torch.tensor([2.0, 4.0, 0.0]),
        ...               torch.tensor(6.0), c=1.0)
        >>> [round(v, 4) for v in s.tolist()]
        [1.4465, 1.4193, inf]
    """
    n_parent = _parent_visits(total_visits, visits)
    safe = visits.clamp(min=1)
    mean = win_count / safe
    bonus = c * torch.sqrt(torch.log(n_parent.clamp(min=1)) / safe)
    return torch.where(visits > 0, mean + bonus, torch.full_like(mean, _UNVISITED))


def puct_score(
    win_count: torch.Tensor,
    visits: torch.Tensor,
    total_visits: torch.Tensor,
    prior_prob: torch.Tensor,
    c: float,
) -> torch.Tensor:
    """PUCT of AlphaGo Zero (Silver et al. 2017): ``Q + c * P * sqrt(N) / (1 + n)``.

    ``Q = win_count / visits`` for a visited action and ``0`` for an unvisited one (the paper
    initialises ``N = W = Q = 0`` when a leaf is expanded).

    Args:
        win_count: ``(..., A)`` the summed values ``W`` of each action.
        visits: ``(..., A)`` the visit counts ``n``.
        total_visits: the parent's count ``N``: scalar, ``(...)`` or ``(..., 1)``.
        prior_prob: ``(..., A)`` the policy's prior ``P``.
        c: the exploration constant ``c_puct``.

    Returns:
        ``(..., A)`` scores.

    Examples:
        >>> import torch
        >>> s = puct_score(torch.tensor([1.0, 0.0]), torch.tensor([2.0, 0.0]),
        ...                torch.tensor(4.0), torch.tensor([0.25, 0.75]), c=2.0)
        >>> [round(v, 4) for v in s.tolist()]
        [0.8333, 3.0]
    """
    n_parent = _parent_visits(total_visits, visits)
    q = torch.where(visits > 0, win_count / visits.clamp(min=1), torch.zeros_like(win_count))
    return q + c * prior_prob * torch.sqrt(n_parent) / (1 + visits)


def ucb1_tuned_score(
    win_count: torch.Tensor,
    visits: torch.Tensor,
    total_visits: torch.Tensor,
    sum_squared_rewards: torch.Tensor,
    exploration_constant: float = 2.0,
) -> torch.Tensor:
    """UCB1-Tuned (Auer, Cesa-Bianchi & Fischer 2002, section 4), for rewards in ``[0, 1]``.

    ``score = mean + sqrt(ln(N) / n * min(1/4, V))`` with
    ``V = sum_squared_rewards / n - mean**2 + sqrt(exploration_constant * ln(N) / n)``;
    an unvisited action scores ``+inf``.

    Args:
        win_count: ``(..., A)`` sum of the rewards of each action.
        visits: ``(..., A)`` visit counts ``n``.
        total_visits: the parent's count ``N``: scalar, ``(...)`` or ``(..., 1)``.
        sum_squared_rewards: ``(..., A)`` sum of the squared rewards of each action.
        exploration_constant: the factor under the variance's bias term (2 in the paper).

    Returns:
        ``(..., A)`` scores.

    Examples:
        >>> import torch
        >>> s = ucb1_tuned_score(torch.tensor([2.0]), torch.tensor([4.0]), torch.tensor(10.0),
        ...                      torch.tensor([2.0]))
        >>> round(s.item(), 4)
        0.8794
    """
    n_parent = _parent_visits(total_visits, visits).clamp(min=1)
    safe = visits.clamp(min=1)
    log_n = torch.log(n_parent)
    mean = win_count / safe
    variance = sum_squared_rewards / safe - mean.square()
    bound = variance + torch.sqrt(exploration_constant * log_n / safe)
    bonus = torch.sqrt(log_n / safe * bound.clamp(0.0, 0.25))
    return torch.where(visits > 0, mean + bonus, torch.full_like(mean, _UNVISITED))


def exp3_probabilities(weights: torch.Tensor, gamma: float) -> torch.Tensor:
    """EXP3's action distribution (Auer, Cesa-Bianchi, Freund & Schapire 2002).

    ``p_i = (1 - gamma) * w_i / sum_j w_j + gamma / K``, ``K = weights.shape[-1]``.

    Args:
        weights: ``(..., K)`` positive weights.
        gamma: the share of uniform exploration, in ``[0, 1]``.

    Returns:
        ``(..., K)`` probabilities summing to 1.

    Examples:
        >>> import torch
        >>> [round(v, 4) for v in exp3_probabilities(torch.tensor([1.0, 3.0]), gamma=0.2).tolist()]
        [0.3, 0.7]
    """
    k = weights.shape[-1]
    return (1 - gamma) * weights / weights.sum(-1, keepdim=True) + gamma / k


def _read(where: str, node: TensorDictBase, key: NestedKey) -> torch.Tensor:
    value = node.get(key, None)
    if value is None:
        raise KeyError(
            f"{where}: expected the entry {key!r} in the node, got keys "
            f"{sorted(map(str, node.keys(True, True)))}. Write it or pass the key's name "
            f"to the constructor."
        )
    return value


class MCTSScore(TensorDictModuleBase):
    """Base of the selection scores: ``forward(node)`` writes ``node[score_key]``, one score
    per action, and returns the node. Subclasses set ``in_keys``/``out_keys``."""

    score_key: NestedKey

    @abstractmethod
    def forward(self, node: TensorDictBase) -> TensorDictBase:
        """Writes the scores of ``node``'s actions under ``score_key``; returns ``node``."""


class UCBScore(MCTSScore):
    """UCT's upper confidence bound (:func:`ucb_score`) on a node's entries.

    Note that TorchRL's ``UCBScore`` computes ``Q + c * sqrt(N) / (1 + n)``; this one follows
    Kocsis & Szepesvari's ``Q + c * sqrt(ln N / n)``, unvisited actions scoring ``+inf``.

    Keyword Args:
        c: the exploration constant (``sqrt(2)`` gives UCB1).
        win_count_key, visits_key, total_visits_key, score_key: the entries read and written.

    Raises:
        ValueError: ``c`` is negative or not finite.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> node = TensorDict(win_count=torch.tensor([1.0, 0.0]), visits=torch.tensor([2.0, 0.0]),
        ...                   total_visits=torch.tensor(2.0))
        >>> [round(v, 4) for v in UCBScore(c=1.0)(node)["score"].tolist()]
        [1.0887, inf]
    """

    def __init__(
        self,
        *,
        c: float,
        win_count_key: NestedKey = "win_count",
        visits_key: NestedKey = "visits",
        total_visits_key: NestedKey = "total_visits",
        score_key: NestedKey = "score",
    ) -> None:
        super().__init__()
        self.c = _check_constant("UCBScore", "c", c)
        self.win_count_key = win_count_key
        self.visits_key = visits_key
        self.total_visits_key = total_visits_key
        self.score_key = score_key
        self.in_keys = [win_count_key, total_visits_key, visits_key]
        self.out_keys = [score_key]

    def forward(self, node: TensorDictBase) -> TensorDictBase:
        where = "UCBScore"
        score = ucb_score(
            _read(where, node, self.win_count_key),
            _read(where, node, self.visits_key),
            _read(where, node, self.total_visits_key),
            self.c,
        )
        node.set(self.score_key, score)
        return node


class PUCTScore(MCTSScore):
    """AlphaZero's PUCT (:func:`puct_score`) on a node's entries.

    Unlike TorchRL's (whose ``W / n`` is NaN for an unvisited action), an unvisited action's
    value term is 0, as in Silver et al. 2017.

    Keyword Args:
        c: the exploration constant ``c_puct``.
        win_count_key, visits_key, total_visits_key, prior_prob_key, score_key: the entries
            read and written.

    Raises:
        ValueError: ``c`` is negative or not finite.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> node = TensorDict(win_count=torch.tensor([1.0, 0.0]), visits=torch.tensor([2.0, 0.0]),
        ...                   total_visits=torch.tensor(4.0), prior_prob=torch.tensor([0.5, 0.5]))
        >>> [round(v, 4) for v in PUCTScore(c=1.0)(node)["score"].tolist()]
        [0.8333, 1.0]
    """

    def __init__(
        self,
        *,
        c: float,
        win_count_key: NestedKey = "win_count",
        visits_key: NestedKey = "visits",
        total_visits_key: NestedKey = "total_visits",
        prior_prob_key: NestedKey = "prior_prob",
        score_key: NestedKey = "score",
    ) -> None:
        super().__init__()
        self.c = _check_constant("PUCTScore", "c", c)
        self.win_count_key = win_count_key
        self.visits_key = visits_key
        self.total_visits_key = total_visits_key
        self.prior_prob_key = prior_prob_key
        self.score_key = score_key
        self.in_keys = [win_count_key, prior_prob_key, total_visits_key, visits_key]
        self.out_keys = [score_key]

    def forward(self, node: TensorDictBase) -> TensorDictBase:
        where = "PUCTScore"
        score = puct_score(
            _read(where, node, self.win_count_key),
            _read(where, node, self.visits_key),
            _read(where, node, self.total_visits_key),
            _read(where, node, self.prior_prob_key),
            self.c,
        )
        node.set(self.score_key, score)
        return node


class UCB1TunedScore(MCTSScore):
    """UCB1-Tuned (:func:`ucb1_tuned_score`) on a node's entries; rewards in ``[0, 1]``.

    Unvisited actions score ``+inf`` (TorchRL's: the dtype's largest value over 10).

    Keyword Args:
        win_count_key, visits_key, total_visits_key, sum_squared_rewards_key, score_key: the
            entries read and written.
        exploration_constant: the factor under the variance's bias term. Defaults to 2.0.

    Raises:
        ValueError: ``exploration_constant`` is negative or not finite.
    """

    def __init__(
        self,
        *,
        win_count_key: NestedKey = "win_count",
        visits_key: NestedKey = "visits",
        total_visits_key: NestedKey = "total_visits",
        sum_squared_rewards_key: NestedKey = "sum_squared_rewards",
        score_key: NestedKey = "score",
        exploration_constant: float = 2.0,
    ) -> None:
        super().__init__()
        self.exploration_constant = _check_constant(
            "UCB1TunedScore", "exploration_constant", exploration_constant
        )
        self.win_count_key = win_count_key
        self.visits_key = visits_key
        self.total_visits_key = total_visits_key
        self.sum_squared_rewards_key = sum_squared_rewards_key
        self.score_key = score_key
        self.in_keys = [win_count_key, visits_key, total_visits_key, sum_squared_rewards_key]
        self.out_keys = [score_key]

    def forward(self, node: TensorDictBase) -> TensorDictBase:
        where = "UCB1TunedScore"
        score = ucb1_tuned_score(
            _read(where, node, self.win_count_key),
            _read(where, node, self.visits_key),
            _read(where, node, self.total_visits_key),
            _read(where, node, self.sum_squared_rewards_key),
            self.exploration_constant,
        )
        node.set(self.score_key, score)
        return node


class EXP3Score(MCTSScore):
    """EXP3's action probabilities (:func:`exp3_probabilities`) and its weight update.

    ``forward`` reads the weights (all ones when the node has none yet, written back) and the
    number of actions ``K``, and writes the probabilities under ``score_key`` (and under
    ``action_prob_key`` when it differs). :meth:`update_weights` applies
    ``w_i <- w_i * exp(gamma / K * reward / p_i)`` to the action played.

    Keyword Args:
        gamma: the share of uniform exploration, in ``[0, 1]``. Defaults to 0.1.
        weights_key, action_prob_key, reward_key, score_key, num_actions_key: the entries.

    Raises:
        ValueError: ``gamma`` is outside ``[0, 1]``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> exp3 = EXP3Score(gamma=0.5)
        >>> node = exp3(TensorDict(num_actions=torch.tensor(2)))
        >>> node["score"].tolist()
        [0.5, 0.5]
        >>> exp3.update_weights(node, action_idx=0, reward=1.0)
        >>> round(node["weights"][0].item(), 4)  # exp(0.5 / 2 * 1 / 0.5)
        1.6487
    """

    def __init__(
        self,
        *,
        gamma: float = 0.1,
        weights_key: NestedKey = "weights",
        action_prob_key: NestedKey = "action_prob",
        reward_key: NestedKey = "reward",
        score_key: NestedKey = "score",
        num_actions_key: NestedKey = "num_actions",
    ) -> None:
        super().__init__()
        gamma = _check_constant("EXP3Score", "gamma", gamma)
        if gamma > 1:
            raise ValueError(f"EXP3Score: expected gamma in [0, 1], got {gamma!r}.")
        self.gamma = gamma
        self.weights_key = weights_key
        self.action_prob_key = action_prob_key
        self.reward_key = reward_key
        self.score_key = score_key
        self.num_actions_key = num_actions_key
        self.in_keys = [weights_key, num_actions_key]
        self.out_keys = [score_key]

    def forward(self, node: TensorDictBase) -> TensorDictBase:
        where = "EXP3Score"
        k_value = _read(where, node, self.num_actions_key)
        ks = torch.as_tensor(k_value).unique()
        if ks.numel() != 1 or ks.is_floating_point() or int(ks) < 1:
            raise ValueError(
                f"{where}: expected {self.num_actions_key!r} to hold one positive integer "
                f"(the number of actions K), got {torch.as_tensor(k_value).tolist()}."
            )
        k = int(ks)
        weights = node.get(self.weights_key, None)
        if weights is None:
            weights = torch.ones((*node.batch_size, k), device=node.device)
            node.set(self.weights_key, weights)
        if weights.shape[-1] != k:
            raise ValueError(
                f"{where}: the weights {self.weights_key!r} have {weights.shape[-1]} actions "
                f"(shape {tuple(weights.shape)}) but {self.num_actions_key!r} says K = {k}."
            )
        probs = exp3_probabilities(weights, self.gamma)
        node.set(self.score_key, probs)
        if self.action_prob_key != self.score_key:
            node.set(self.action_prob_key, probs)
        return node

    def update_weights(self, node: TensorDictBase, action_idx: int, reward: float) -> None:
        """Multiplies the weight of the action played by ``exp(gamma / K * reward / p)``.

        Args:
            node: a node :meth:`forward` has scored (it holds the weights and the scores).
            action_idx: the action played, in ``[0, K)``.
            reward: its reward, in ``[0, 1]``.

        Raises:
            ValueError: ``reward`` is outside ``[0, 1]``, ``action_idx`` outside ``[0, K)``,
                or the action's probability is not positive.
        """
        where = "EXP3Score.update_weights"
        if not 0.0 <= float(reward) <= 1.0:
            raise ValueError(f"{where}: expected reward in [0, 1], got {reward!r}.")
        weights = _read(where, node, self.weights_key)
        probs = _read(where, node, self.score_key)
        k = weights.shape[-1]
        if isinstance(action_idx, bool) or not isinstance(action_idx, int):
            raise TypeError(
                f"{where}: expected action_idx to be an int, got {type(action_idx).__name__}."
            )
        if not 0 <= action_idx < k:
            raise ValueError(f"{where}: expected action_idx in [0, {k}), got {action_idx}.")
        p = probs[..., action_idx]
        if bool((p <= 0).any()):
            raise ValueError(
                f"{where}: action {action_idx} has probability {p.tolist()}; EXP3 divides by "
                f"it. Score the node with gamma > 0 or positive weights first."
            )
        weights = weights.clone()
        weights[..., action_idx] = weights[..., action_idx] * torch.exp(self.gamma / k * reward / p)
        node.set(self.weights_key, weights)


class MCTSScores(Enum):
    """The scores with TorchRL's default constants; call a member to build one.

    Examples:
        >>> MCTSScores.PUCT.value().c, MCTSScores.UCB.value().c
        (5.0, 1.4142135623730951)
    """

    PUCT = member(functools.partial(PUCTScore, c=5.0))
    UCB = member(functools.partial(UCBScore, c=math.sqrt(2)))
    UCB1_TUNED = member(functools.partial(UCB1TunedScore, exploration_constant=2.0))
    EXP3 = member(functools.partial(EXP3Score, gamma=0.1))


__all__ = [
    "EXP3Score",
    "MCTSScore",
    "MCTSScores",
    "PUCTScore",
    "UCB1TunedScore",
    "UCBScore",
    "exp3_probabilities",
    "puct_score",
    "ucb1_tuned_score",
    "ucb_score",
]
