"""Ordinal and OneHotOrdinal: log-probabilities against Tang & Agrawal's Eq. 4 written out."""

import math

import pytest
import torch

from rl_objectives.modules import OneHotOrdinal, Ordinal, ordinal_logits

F64 = torch.float64


def _reference_log_probs(scores):
    def log_sig(v):
        return -math.log1p(math.exp(-v))

    logits = [
        sum(log_sig(s) for s in scores[: k + 1]) + sum(log_sig(-s) for s in scores[k + 1 :])
        for k in range(len(scores))
    ]
    norm = math.log(sum(math.exp(v) for v in logits))
    return [v - norm for v in logits]


def test_log_probs_are_the_ordinal_parametrisation():
    scores = [0.5, -1.2, 2.0, 0.1]
    dist = Ordinal(scores=torch.tensor(scores, dtype=F64))
    expected = _reference_log_probs(scores)
    got = dist.log_prob(torch.arange(4)).tolist()
    assert got == pytest.approx(expected, rel=1e-12)
    one_hot = OneHotOrdinal(scores=torch.tensor(scores, dtype=F64))
    assert one_hot.log_prob(torch.eye(4, dtype=F64)).tolist() == pytest.approx(expected, rel=1e-12)


def test_batched_scores_and_samples():
    scores = torch.randn(5, 3, 6)
    dist = Ordinal(scores)
    assert dist.sample((2,)).shape == (2, 5, 3)
    assert OneHotOrdinal(scores).sample().shape == (5, 3, 6)
    torch.testing.assert_close(dist.logits.exp().sum(-1), torch.ones(5, 3))
    # the logits are those of the parametrisation, up to the normaliser
    raw = ordinal_logits(scores)
    torch.testing.assert_close(dist.logits, raw - raw.logsumexp(-1, keepdim=True))


def test_bad_scores_are_named():
    with pytest.raises(
        ValueError, match=r"scores to be a floating tensor of shape \(\*B, N\), got torch.int64"
    ):
        Ordinal(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"got torch.float32 of shape ()"):
        OneHotOrdinal(torch.tensor(1.0))
