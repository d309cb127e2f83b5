"""The selection scores against float64 references written from the papers' formulas."""

import math

import pytest
import torch
from tensordict import TensorDict

from rl_buffers.map.scores import (
    EXP3Score,
    MCTSScore,
    MCTSScores,
    PUCTScore,
    UCB1TunedScore,
    UCBScore,
)

W = [3.0, 0.0, 1.5, 0.0]
N = [5.0, 2.0, 3.0, 0.0]
N_PARENT = 10.0
P = [0.1, 0.2, 0.3, 0.4]
SQ = [2.5, 0.0, 1.25, 0.0]


def uct_reference(c):  # Kocsis & Szepesvari 2006: X_j + c * sqrt(ln n / T_j)
    return [w / n + c * math.sqrt(math.log(N_PARENT) / n) if n else math.inf for w, n in zip(W, N)]


def puct_reference(c):  # Silver et al. 2017: Q + c P sqrt(sum_b N_b) / (1 + N_a), Q(unvisited) = 0
    return [
        (w / n if n else 0.0) + c * p * math.sqrt(N_PARENT) / (1 + n) for w, n, p in zip(W, N, P)
    ]


def ucb1_tuned_reference():  # Auer et al. 2002, section 4
    out = []
    for w, n, sq in zip(W, N, SQ):
        if not n:
            out.append(math.inf)
            continue
        mean = w / n
        v = sq / n - mean**2 + math.sqrt(2 * math.log(N_PARENT) / n)
        out.append(mean + math.sqrt(math.log(N_PARENT) / n * min(0.25, v)))
    return out


def node(**extra):
    td = TensorDict(
        win_count=torch.tensor(W, dtype=torch.float64),
        visits=torch.tensor(N, dtype=torch.float64),
        total_visits=torch.tensor(N_PARENT, dtype=torch.float64),
        prior_prob=torch.tensor(P, dtype=torch.float64),
        sum_squared_rewards=torch.tensor(SQ, dtype=torch.float64),
    )
    td.update(extra)
    return td


@pytest.mark.parametrize("c", [0.0, 1.0, math.sqrt(2)])
def test_ucb_is_uct(c):
    got = UCBScore(c=c)(node())["score"]
    assert got.dtype == torch.float64
    assert got.tolist() == pytest.approx(uct_reference(c), rel=1e-12)


@pytest.mark.parametrize("c", [0.5, 5.0])
def test_puct_is_alphazero(c):
    got = PUCTScore(c=c)(node())["score"]
    assert got.tolist() == pytest.approx(puct_reference(c), rel=1e-12)


def test_ucb1_tuned_is_auer():
    got = UCB1TunedScore()(node())["score"]
    assert got.tolist() == pytest.approx(ucb1_tuned_reference(), rel=1e-12)


def test_batched_nodes_broadcast_the_parent_count():
    batch = torch.stack([node(), node()])
    batch["total_visits"] = torch.tensor([N_PARENT, N_PARENT], dtype=torch.float64)
    got = PUCTScore(c=1.0)(batch)["score"]
    assert got.shape == (2, 4)
    assert got[1].tolist() == pytest.approx(puct_reference(1.0), rel=1e-12)


def test_custom_keys():
    td = TensorDict(
        {("stats", "w"): torch.tensor(W), "n": torch.tensor(N), "N": torch.tensor(N_PARENT)}
    )
    UCBScore(
        c=1.0, win_count_key=("stats", "w"), visits_key="n", total_visits_key="N", score_key="u"
    )(td)
    assert td["u"].tolist() == pytest.approx(uct_reference(1.0), rel=1e-6)


def test_exp3_probabilities_and_update_follow_auer():
    gamma = 0.3
    weights = [1.0, 2.0, 5.0]
    exp3 = EXP3Score(gamma=gamma)
    td = exp3(
        TensorDict(weights=torch.tensor(weights, dtype=torch.float64), num_actions=torch.tensor(3))
    )
    p = [(1 - gamma) * w / sum(weights) + gamma / 3 for w in weights]
    assert td["score"].tolist() == pytest.approx(p, rel=1e-12)
    assert td["action_prob"].tolist() == pytest.approx(p, rel=1e-12)
    exp3.update_weights(td, action_idx=1, reward=0.6)
    expected = [1.0, 2.0 * math.exp(gamma / 3 * 0.6 / p[1]), 5.0]
    assert td["weights"].tolist() == pytest.approx(expected, rel=1e-12)


def test_exp3_starts_from_uniform_weights():
    td = EXP3Score(gamma=0.1)(TensorDict(num_actions=torch.tensor([4, 4]), batch_size=[2]))
    assert td["weights"].shape == (2, 4)
    assert td["score"].flatten().tolist() == pytest.approx([0.25] * 8)


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match=r"EXP3Score: expected gamma in \[0, 1\], got 1.5"):
        EXP3Score(gamma=1.5)
    with pytest.raises(ValueError, match="PUCTScore: expected c to be a finite float >= 0"):
        PUCTScore(c=-1.0)
    with pytest.raises(TypeError, match="UCBScore: expected c to be a float, got str"):
        UCBScore(c="1")
    with pytest.raises(KeyError, match="PUCTScore: expected the entry 'prior_prob'"):
        PUCTScore(c=1.0)(node().exclude("prior_prob"))
    exp3 = EXP3Score()
    td = exp3(TensorDict(num_actions=torch.tensor(2)))
    with pytest.raises(ValueError, match=r"expected reward in \[0, 1\], got 2.0"):
        exp3.update_weights(td, action_idx=0, reward=2.0)
    with pytest.raises(ValueError, match=r"expected action_idx in \[0, 2\), got 5"):
        exp3.update_weights(td, action_idx=5, reward=0.5)
    with pytest.raises(ValueError, match="have 3 actions"):
        exp3(TensorDict(num_actions=torch.tensor(2), weights=torch.ones(3)))


def test_score_enum_builds_torchrl_defaults():
    assert isinstance(MCTSScores.PUCT.value(), PUCTScore)
    assert MCTSScores.UCB.value().c == pytest.approx(math.sqrt(2))
    assert MCTSScores.EXP3.value().gamma == pytest.approx(0.1)
    assert all(isinstance(m.value(), MCTSScore) for m in MCTSScores)
