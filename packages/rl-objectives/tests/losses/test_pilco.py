"""ExponentialQuadraticCost: the expected saturating cost against its closed form written out
by hand, and against a Monte-Carlo estimate."""

import math

import pytest
import torch
from tensordict import TensorDict

from rl_objectives.losses import ExponentialQuadraticCost, expected_saturating_cost

F64 = torch.float64


def _td(mean, cov):
    td = TensorDict(batch_size=mean.shape[:-1])
    td["observation", "mean"], td["observation", "var"] = mean, cov
    return td


def test_one_dimensional_expected_cost_is_the_closed_form():
    # x ~ N(m, s2), c = 1 - exp(-w (x - t)^2 / 2): E[c] = 1 - exp(-w (m - t)^2 / (2 (1 + w s2))) / sqrt(1 + w s2)
    m, s2, t, w = 0.7, 0.3, -0.2, 4.0
    cost = ExponentialQuadraticCost(
        target=torch.tensor([t], dtype=F64),
        weights=torch.tensor([[w]], dtype=F64),
        reduction="none",
    )
    out = cost(_td(torch.tensor([[m]], dtype=F64), torch.tensor([[[s2]]], dtype=F64)))["loss_cost"]
    expected = 1 - math.exp(-w * (m - t) ** 2 / (2 * (1 + w * s2))) / math.sqrt(1 + w * s2)
    assert out.item() == pytest.approx(expected, rel=1e-12)


def test_expected_cost_matches_a_monte_carlo_estimate():
    mean = torch.tensor([0.3, -0.5, 1.0], dtype=F64)
    a = torch.tensor([[0.3, 0.0, 0.0], [0.1, 0.2, 0.0], [0.0, 0.1, 0.4]], dtype=F64)
    cov = a @ a.T
    target = torch.tensor([1.0, 0.0, 0.0], dtype=F64)
    weights = torch.tensor([[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 0.0]], dtype=F64)
    g = torch.Generator().manual_seed(0)
    x = mean + torch.randn(500_000, 3, generator=g, dtype=F64) @ a.T
    d = x - target
    mc = (1 - torch.exp(-0.5 * ((d @ weights) * d).sum(-1))).mean()
    assert expected_saturating_cost(mean, cov, target, weights).item() == pytest.approx(
        mc.item(), abs=2e-3
    )


def test_reductions_and_defaults():
    cost = ExponentialQuadraticCost(reduction="none")
    mean = torch.tensor([[0.0, 0.0], [1.0, 0.0]], dtype=F64)
    out = cost(_td(mean, torch.zeros(2, 2, 2, dtype=F64)))
    assert out.batch_size == (2,)
    torch.testing.assert_close(out["loss_cost"], torch.tensor([0.0, 1 - math.exp(-0.5)], dtype=F64))
    total = ExponentialQuadraticCost(reduction="sum")(_td(mean, torch.zeros(2, 2, 2, dtype=F64)))
    assert total["loss_cost"].item() == pytest.approx(1 - math.exp(-0.5))
    renamed = ExponentialQuadraticCost().set_keys(loc="m", scale="s")
    assert renamed(TensorDict(m=torch.zeros(2), s=torch.zeros(2, 2)))["loss_cost"].item() == 0.0


def test_the_cost_is_differentiable_in_the_belief():
    mean = torch.tensor([0.5, 0.5], dtype=F64, requires_grad=True)
    out = ExponentialQuadraticCost()(_td(mean, 0.1 * torch.eye(2, dtype=F64)))
    out["loss_cost"].backward()
    assert (mean.grad > 0).all()  # moving towards the origin lowers the cost


def test_bad_arguments_are_named():
    with pytest.raises(
        ValueError, match=r"target to be a vector of shape \(D,\), got shape \(1, 2\)"
    ):
        ExponentialQuadraticCost(target=torch.zeros(1, 2))
    with pytest.raises(
        ValueError, match=r"weights to be a square \(D, D\) matrix, got shape \(2, 3\)"
    ):
        ExponentialQuadraticCost(weights=torch.zeros(2, 3))
    with pytest.raises(ValueError, match="expected symmetric weights"):
        ExponentialQuadraticCost(weights=torch.tensor([[1.0, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"weights of shape \(3, 3\) to match the target"):
        ExponentialQuadraticCost(target=torch.zeros(3), weights=torch.eye(2))
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'max'"):
        ExponentialQuadraticCost(reduction="max")
    cost = ExponentialQuadraticCost(target=torch.zeros(3))
    with pytest.raises(ValueError, match=r"expected a state mean \(\*B, 3\)"):
        cost(_td(torch.zeros(2), torch.zeros(2, 2)))
    with pytest.raises(
        KeyError, match=r"ExponentialQuadraticCost: the batch has no entry \('observation', 'var'\)"
    ):
        cost(TensorDict(batch_size=[]).set(("observation", "mean"), torch.zeros(3)))
