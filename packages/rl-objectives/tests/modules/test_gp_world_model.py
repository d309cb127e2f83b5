"""GPWorldModel against the GP formulas written out by hand (float64), and moment matching
against the one-dimensional closed form and a Monte-Carlo estimate."""

import math

import pytest
import torch
from tensordict import TensorDict

from rl_objectives.modules import GPWorldModel
from rl_objectives.modules._gp_moments import gp_factorize, moment_match

F64 = torch.float64


def _dataset(n=25, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g, dtype=F64) * 2 - 1
    u = torch.rand(n, 1, generator=g, dtype=F64) * 2 - 1
    data = TensorDict(observation=x, action=u, batch_size=[n])
    data["next", "observation"] = x + 0.1 * torch.cat(
        [torch.sin(3 * x[:, :1]) + u, x[:, :1] * u], -1
    )
    return data


def _belief(mean, cov, u_mean, u_cov, cross):
    td = TensorDict(batch_size=mean.shape[:-1])
    td["observation", "mean"], td["observation", "var"] = mean, cov
    td["action", "mean"], td["action", "var"], td["action", "cross_covariance"] = (
        u_mean,
        u_cov,
        cross,
    )
    return td


def test_posterior_mean_and_variance_are_the_gp_formulas():
    data = _dataset(n=12)
    model = GPWorldModel(2, 1, fit_steps=20)
    model.fit(data)
    x_train = torch.cat([data["observation"], data["action"]], -1)
    targets = data["next", "observation"] - data["observation"]
    x_star = torch.tensor([[0.3, -0.2, 0.5]], dtype=F64)
    expected_mean, expected_var = [], []
    for a in range(2):
        ell, sf2, sn2 = model.ell[a], model.alpha_sq[a, 0], model.sigma_sq_eps[a]

        def k(p, q, ell=ell, sf2=sf2):
            return sf2 * math.exp(-0.5 * sum(((p[e] - q[e]) / ell[e]) ** 2 for e in range(3)))

        n = x_train.shape[0]
        gram = torch.tensor([[k(x_train[i], x_train[j]) for j in range(n)] for i in range(n)])
        gram = gram + (sn2 + 1e-8) * torch.eye(n, dtype=F64)
        k_star = torch.tensor([k(x_star[0], x_train[i]) for i in range(n)], dtype=F64)
        expected_mean.append(k_star @ torch.linalg.solve(gram, targets[:, a]))
        expected_var.append(sf2 - k_star @ torch.linalg.solve(gram, k_star))
    td = _belief(
        x_star[:, :2], torch.zeros(1, 2, 2, dtype=F64), x_star[:, 2:],
        torch.zeros(1, 1, 1, dtype=F64), torch.zeros(1, 2, 1, dtype=F64),
    )  # fmt: skip
    out = model(td)
    torch.testing.assert_close(
        out["next", "observation", "mean"][0], x_star[0, :2] + torch.stack(expected_mean)
    )
    torch.testing.assert_close(
        out["next", "observation", "var"][0], torch.diag(torch.stack(expected_var))
    )


def test_fit_maximises_the_marginal_likelihood_and_predicts_held_out_transitions():
    data = _dataset(n=40)
    model = GPWorldModel(2, 1, fit_steps=30)
    model.fit(data)
    test = _dataset(n=20, seed=1)
    td = _belief(
        test["observation"], torch.zeros(20, 2, 2, dtype=F64), test["action"],
        torch.zeros(20, 1, 1, dtype=F64), torch.zeros(20, 2, 1, dtype=F64),
    )  # fmt: skip
    error = model(td)["next", "observation", "mean"] - test["next", "observation"]
    change = test["next", "observation"] - test["observation"]
    assert error.square().mean() < 0.05 * change.square().mean()


def test_one_dimensional_moment_matching_is_the_closed_form():
    # E[a^2 exp(-(x - c)^2 / (2 l^2))] for x ~ N(m, s^2) = a^2 l / sqrt(l^2 + s^2)
    # * exp(-(m - c)^2 / (2 (l^2 + s^2))), and the second moment likewise with l^2 / 2
    ell, sf2, c, m, s2, beta = 0.7, 1.3, 0.4, -0.1, 0.25, 2.0
    mean, var, io = moment_match(
        torch.tensor([[m]], dtype=F64), torch.tensor([[[s2]]], dtype=F64),
        torch.tensor([[c]], dtype=F64), torch.tensor([[beta]], dtype=F64),
        torch.tensor([[ell]], dtype=F64), torch.tensor([sf2], dtype=F64),
    )  # fmt: skip
    first = sf2 * ell / math.sqrt(ell**2 + s2) * math.exp(-((m - c) ** 2) / (2 * (ell**2 + s2)))
    half = ell**2 / 2
    second = sf2**2 * math.sqrt(half / (half + s2)) * math.exp(-((m - c) ** 2) / (2 * (half + s2)))
    assert mean.item() == pytest.approx(beta * first, rel=1e-10)
    assert var.item() == pytest.approx(beta**2 * second - (beta * first) ** 2, rel=1e-10)
    # Cov[x, f] = s2 (c - m) / (l^2 + s2) * E[f]; io is that divided by s2
    assert io.item() == pytest.approx((c - m) / (ell**2 + s2) * beta * first, rel=1e-10)


def test_uncertain_forward_matches_a_monte_carlo_estimate():
    data = _dataset(n=20)
    model = GPWorldModel(2, 1, fit_steps=20)
    model.fit(data)
    mean = torch.tensor([0.2, -0.3], dtype=F64)
    a = torch.tensor([[0.2, 0.05], [0.0, 0.15]], dtype=F64)
    cov = a @ a.T
    u_mean, u_cov = torch.tensor([0.1], dtype=F64), torch.tensor([[0.04]], dtype=F64)
    cross = torch.tensor([[0.5], [-0.2]], dtype=F64)  # Sigma_x^-1 Cov[x, u]
    out = model(_belief(mean, cov, u_mean, u_cov, cross))
    # sample the joint (x, u), then f from the GP posterior at each sample
    s_xu = cov @ cross
    joint = torch.cat([torch.cat([cov, s_xu], 1), torch.cat([s_xu.T, u_cov], 1)], 0)
    g = torch.Generator().manual_seed(0)
    z = torch.randn(60_000, 3, generator=g, dtype=F64)
    samples = torch.cat([mean, u_mean]) + z @ torch.linalg.cholesky(joint).T
    inv_k, beta = model.compute_factorizations()
    x_train = model.X_tilde_train
    nxt = []
    for d in range(2):
        ell = model.ell[d]
        k = model.alpha_sq[d] * torch.exp(-0.5 * torch.cdist(samples / ell, x_train / ell) ** 2)
        f_mean = k @ beta[d]
        f_var = model.alpha_sq[d] - ((k @ inv_k[d]) * k).sum(-1)
        nxt.append((samples[:, d] + f_mean, f_var))
    mc_next = torch.stack([m for m, _ in nxt], -1)
    mc_cov = torch.cov(mc_next.T) + torch.diag(torch.stack([v.mean() for _, v in nxt]))
    torch.testing.assert_close(
        out["next", "observation", "mean"], mc_next.mean(0), atol=5e-3, rtol=0
    )
    torch.testing.assert_close(out["next", "observation", "var"], mc_cov, atol=5e-3, rtol=0)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="obs_dim to be an integer >= 1, got 0"):
        GPWorldModel(0, 1)
    with pytest.raises(ValueError, match="expected 5 in_keys"):
        GPWorldModel(2, 1, in_keys=["a"])
    model = GPWorldModel(2, 1)
    with pytest.raises(RuntimeError, match="not fitted; call fit"):
        model(
            _belief(
                torch.zeros(2),
                torch.zeros(2, 2),
                torch.zeros(1),
                torch.zeros(1, 1),
                torch.zeros(2, 1),
            )
        )
    data = _dataset()
    with pytest.raises(KeyError, match="no 'action' entry"):
        model.fit(data.exclude("action"))
    with pytest.raises(
        ValueError, match=r"expected 'observation' of shape \(n, 2\), got \(25, 3\)"
    ):
        model.fit(data.set("observation", torch.zeros(25, 3)))
    model = GPWorldModel(2, 1, fit_steps=5)
    model.fit(_dataset())
    with pytest.raises(ValueError, match=r"\('observation', 'var'\) to end with shape \(2, 2\)"):
        model(
            _belief(
                torch.zeros(2), torch.zeros(2), torch.zeros(1), torch.zeros(1, 1), torch.zeros(2, 1)
            )
        )


def test_gp_factorize_solves_the_noisy_gram():
    x = torch.randn(6, 2, dtype=F64)
    y = torch.randn(1, 6, dtype=F64)
    inv_k, beta = gp_factorize(
        x,
        y,
        torch.ones(1, 2, dtype=F64),
        torch.ones(1, dtype=F64),
        torch.full((1,), 0.1, dtype=F64),
    )
    gram = torch.exp(-0.5 * torch.cdist(x, x) ** 2) + (0.1 + 1e-8) * torch.eye(6, dtype=F64)
    torch.testing.assert_close(inv_k[0] @ gram, torch.eye(6, dtype=F64))
    torch.testing.assert_close(beta[0], torch.linalg.solve(gram, y[0]))
