"""RBFController: the deterministic RBF policy at zero covariance, its moments against a
Monte-Carlo estimate, and the sine squashing against the hand-derived expectations."""

import math

import pytest
import torch

from rl_objectives.modules import RBFController

F64 = torch.float64


def _policy(max_action=2.0):
    torch.manual_seed(0)
    policy = RBFController(input_dim=2, output_dim=1, max_action=max_action, n_basis=4).double()
    with torch.no_grad():
        policy.weights.copy_(torch.tensor([[1.0], [-0.5], [0.8], [0.3]], dtype=F64))
        policy.lengthscales.copy_(torch.tensor([0.8, 1.2], dtype=F64))
    return policy


def test_zero_covariance_gives_the_squashed_rbf_network():
    policy = _policy()
    x = torch.tensor([0.3, -0.4], dtype=F64)
    pre = sum(
        policy.weights[i, 0].item()
        * math.exp(
            -0.5
            * sum(
                ((x[e] - policy.centers[i, e]) / policy.lengthscales[e]).item() ** 2
                for e in range(2)
            )
        )
        for i in range(4)
    )
    mean, cov, _ = policy(x, torch.zeros(2, 2, dtype=F64))
    # the action variance is the 1e-6 jitter, which damps the squashed mean by exp(-1e-6 / 2)
    assert mean.item() == pytest.approx(2.0 * math.exp(-0.5e-6) * math.sin(pre), rel=1e-10)
    assert cov.item() == pytest.approx(2.0**2 * 1e-6 * math.cos(pre) ** 2, abs=1e-9)


def test_unsquashed_moments_match_a_monte_carlo_estimate():
    # exact for the RBF network; the sine squashing then acts on its Gaussian approximation
    policy = _policy(max_action=None)
    mean = torch.tensor([0.1, 0.2], dtype=F64)
    cov = torch.tensor([[0.09, 0.02], [0.02, 0.16]], dtype=F64)
    a_mean, a_cov, cross = policy(mean, cov)
    g = torch.Generator().manual_seed(1)
    x = mean + torch.randn(200_000, 2, generator=g, dtype=F64) @ torch.linalg.cholesky(cov).T
    with torch.no_grad():
        phi = torch.exp(-0.5 * (((x[:, None] - policy.centers) / policy.lengthscales) ** 2).sum(-1))
        u = phi @ policy.weights
    assert a_mean.item() == pytest.approx(u.mean().item(), abs=3e-3)
    assert a_cov.item() == pytest.approx(u.var().item() + 1e-6, abs=1e-3)
    mc_cross = ((x - x.mean(0)).T @ (u - u.mean(0))) / x.shape[0]  # Cov[x, u]
    torch.testing.assert_close(cov @ cross, mc_cross, atol=3e-3, rtol=0)


def test_squash_sin_is_the_gaussian_expectation_of_sine():
    m = torch.tensor([0.4, -1.0], dtype=F64)
    s = torch.tensor([[0.3, 0.1], [0.1, 0.5]], dtype=F64)
    mean, cov, cross = RBFController.squash_sin(m, s, torch.tensor([2.0, 1.0], dtype=F64))
    e1 = [math.exp(-s[i, i].item() / 2) * math.sin(m[i].item()) for i in range(2)]
    assert mean.tolist() == pytest.approx([2.0 * e1[0], e1[1]], rel=1e-12)
    # E[sin a sin b] = (E cos(a - b) - E cos(a + b)) / 2
    var_diff = s[0, 0] + s[1, 1] - 2 * s[0, 1]
    var_sum = s[0, 0] + s[1, 1] + 2 * s[0, 1]
    e_ab = 0.5 * (
        math.exp(-var_diff / 2) * math.cos(m[0] - m[1])
        - math.exp(-var_sum / 2) * math.cos(m[0] + m[1])
    )
    assert cov[0, 1].item() == pytest.approx(2.0 * (e_ab - e1[0] * e1[1]), rel=1e-12)
    e_aa = 0.5 * (1 - math.exp(-2 * s[0, 0].item()) * math.cos(2 * m[0].item()))
    assert cov[0, 0].item() == pytest.approx(4.0 * (e_aa - e1[0] ** 2), rel=1e-12)
    assert cross[0, 0].item() == pytest.approx(2.0 * math.exp(-0.15) * math.cos(0.4), rel=1e-12)
    assert cross[0, 1].item() == 0.0


def test_batched_inputs_and_bad_arguments():
    policy = RBFController(3, 2, max_action=1.0, n_basis=5)
    mean, cov, cross = policy(torch.zeros(4, 5, 3), 0.01 * torch.eye(3).expand(4, 5, 3, 3))
    assert mean.shape == (4, 5, 2)
    assert cov.shape == (4, 5, 2, 2)
    assert cross.shape == (4, 5, 3, 2)
    with pytest.raises(ValueError, match="n_basis to be an integer >= 1, got 0"):
        RBFController(3, 1, max_action=1.0, n_basis=0)
    with pytest.raises(ValueError, match="max_action to be a positive number or 1"):
        RBFController(3, 1, max_action=-1.0)
    with pytest.raises(ValueError, match=r"mean of shape \(\*B, 3\).*got \(4,\) and \(3, 3\)"):
        policy(torch.zeros(4), torch.zeros(3, 3))
