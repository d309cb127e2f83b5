"""LLMMaskedCategorical against a float64 reference written with plain Python."""

import math

import pytest
import torch

from rl_llm.modules import LLMMaskedCategorical


def _log_softmax(row, allowed=None):
    allowed = allowed or [True] * len(row)
    z = math.log(sum(math.exp(x) for x, a in zip(row, allowed) if a))
    return [x - z if a else -math.inf for x, a in zip(row, allowed)]


def test_position_masking_by_hand():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 3, 5, generator=g, dtype=torch.float64)
    mask = torch.tensor([[False, True, True], [True, True, False]])
    tokens = torch.tensor([[-100, 4, 0], [2, -100, 3]])
    dist = LLMMaskedCategorical(logits, mask)
    got = dist.log_prob(tokens)
    for b in range(2):
        for t in range(3):
            if mask[b, t] and tokens[b, t] != -100:
                want = _log_softmax(logits[b, t].tolist())[int(tokens[b, t])]
            else:
                want = 0.0
            assert got[b, t].item() == pytest.approx(want, rel=1e-12)
    entropy = dist.entropy()
    for b in range(2):
        for t in range(3):
            lp = _log_softmax(logits[b, t].tolist())
            want = -sum(math.exp(x) * x for x in lp) if mask[b, t] else 0.0
            assert entropy[b, t].item() == pytest.approx(want, rel=1e-12)
    samples = dist.sample((200,))
    assert samples.shape == (200, 2, 3)
    assert (samples[:, ~mask] == -100).all()
    assert ((samples[:, mask] >= 0) & (samples[:, mask] < 5)).all()
    assert dist.mode.tolist() == [
        [-100, int(logits[0, 1].argmax()), int(logits[0, 2].argmax())],
        [int(logits[1, 0].argmax()), int(logits[1, 1].argmax()), -100],
    ]


def test_token_masking_by_hand():
    logits = torch.tensor([[[0.0, 1.0, 2.0], [3.0, 0.0, -1.0]]], dtype=torch.float64)
    allowed = torch.tensor([[[True, True, False], [False, False, False]]])
    dist = LLMMaskedCategorical(logits, allowed)
    assert not dist.position_level_masking
    assert dist.mask.tolist() == [[True, False]]  # no allowed token: the position is masked
    lp = dist.log_prob(torch.tensor([[1, 0]]))
    assert lp[0, 0].item() == pytest.approx(_log_softmax([0.0, 1.0, 2.0], [True, True, False])[1])
    assert lp[0, 1].item() == 0.0
    assert dist.log_prob(torch.tensor([[2, 0]]))[0, 0].item() == -math.inf
    assert (dist.sample((100,))[:, 0, 0] != 2).all()
    p = [math.exp(x) for x in _log_softmax([0.0, 1.0], None)]
    want = -sum(q * math.log(q) for q in p)
    assert dist.entropy()[0, 0].item() == pytest.approx(want, rel=1e-12)
    assert dist.mode.tolist() == [[1, -100]]


def test_gradients_flow_only_through_scored_tokens():
    logits = torch.zeros(1, 2, 3, requires_grad=True)
    dist = LLMMaskedCategorical(logits, torch.tensor([[True, False]]))
    dist.log_prob(torch.tensor([[1, 2]])).sum().backward()
    assert logits.grad[0, 1].abs().sum().item() == 0.0
    assert logits.grad[0, 0].tolist() == pytest.approx([-1 / 3, 2 / 3, -1 / 3])


def test_bad_input_is_reported():
    with pytest.raises(
        ValueError, match=r"expected a mask of shape \(2, 3\) \(positions\) or \(2, 3, 4\)"
    ):
        LLMMaskedCategorical(torch.zeros(2, 3, 4), torch.ones(2, 4, dtype=torch.bool))
    dist = LLMMaskedCategorical(torch.zeros(1, 2, 4), torch.ones(1, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"expected token ids in \[0, 4\) or ignore_index=-100"):
        dist.log_prob(torch.tensor([[0, 7]]))
    with pytest.raises(ValueError, match=r"expected tokens of shape \(1, 2\), got \(2,\)"):
        dist.log_prob(torch.tensor([0, 1]))
