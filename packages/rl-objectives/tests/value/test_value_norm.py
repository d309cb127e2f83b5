"""ValueNorm family against hand-written float64 references of their definitions."""

import math

import pytest
import torch

from rl_objectives.value import (
    PercentileValueNorm,
    PopArtValueNorm,
    RunningValueNorm,
    ValueNorm,
)


def batches(n=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(7, 3, 1, generator=g, dtype=torch.float64) * (i + 1) * 4 + 2 * i)
        for i in range(n)
    ]


def test_popart_matches_debiased_ema_reference():
    beta, eps = 0.9, 1e-5
    vn = PopArtValueNorm(beta=beta, epsilon=eps).double()
    mu = nu = d = 0.0
    for b in batches():
        vn.update(b)
        xs = b.flatten().tolist()
        mu = beta * mu + (1 - beta) * sum(xs) / len(xs)
        nu = beta * nu + (1 - beta) * sum(x * x for x in xs) / len(xs)
        d = beta * d + (1 - beta)
    mean = mu / max(d, eps)
    var = max(nu / max(d, eps) - mean**2, eps)
    x = torch.tensor([[-3.0], [0.5], [11.0]], dtype=torch.float64)
    ref = torch.tensor(
        [[(v - mean) / math.sqrt(var)] for v in (-3.0, 0.5, 11.0)], dtype=torch.float64
    )
    torch.testing.assert_close(vn.normalize(x), ref)
    torch.testing.assert_close(vn.denormalize(vn.normalize(x)), x)
    assert vn.scale().item() == pytest.approx(math.sqrt(var), rel=1e-12)


def test_popart_before_any_update_is_the_identity_up_to_epsilon():
    vn = PopArtValueNorm()
    x = torch.tensor([[2.0]])
    # mean 0, var clamped to epsilon
    torch.testing.assert_close(vn.normalize(x), x / math.sqrt(1e-5))


def test_running_matches_exact_population_statistics():
    vn = RunningValueNorm().double()
    seen = []
    for b in batches(4, seed=3):
        vn.update(b)
        seen += b.flatten().tolist()
    n = len(seen)
    mean = sum(seen) / n
    var = sum((x - mean) ** 2 for x in seen) / n
    assert vn.count.item() == n
    assert vn.mean.item() == pytest.approx(mean, rel=1e-12)
    assert vn.scale().item() == pytest.approx(math.sqrt(var), rel=1e-12)
    x = torch.tensor([[4.0]], dtype=torch.float64)
    assert vn.normalize(x).item() == pytest.approx((4.0 - mean) / math.sqrt(var), rel=1e-12)
    torch.testing.assert_close(vn.denormalize(vn.normalize(x)), x)


def test_running_keeps_one_statistic_per_trailing_element():
    vn = RunningValueNorm(shape=2).double()
    b = torch.tensor([[1.0, 10.0], [3.0, 30.0]], dtype=torch.float64)
    vn.update(b)
    torch.testing.assert_close(vn.mean, torch.tensor([2.0, 20.0], dtype=torch.float64))
    torch.testing.assert_close(vn.scale(), torch.tensor([1.0, 10.0], dtype=torch.float64))


def _quantile(xs, q):  # linear interpolation, numpy's default definition
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@pytest.mark.parametrize("center", [False, True])
def test_percentile_matches_ema_of_quantiles(center):
    rate, qs, min_scale = 0.3, (0.1, 0.9), 0.5
    vn = PercentileValueNorm(quantiles=qs, rate=rate, min_scale=min_scale, center=center).double()
    low = high = 0.0
    for b in batches(4, seed=5):
        vn.update(b)
        xs = b.flatten().tolist()
        low += rate * (_quantile(xs, qs[0]) - low)
        high += rate * (_quantile(xs, qs[1]) - high)
    scale = max(min_scale, high - low)
    assert vn.scale().item() == pytest.approx(scale, rel=1e-12)
    x = torch.tensor([[7.0]], dtype=torch.float64)
    ref = ((7.0 - low) if center else 7.0) / scale
    assert vn.normalize(x).item() == pytest.approx(ref, rel=1e-12)
    torch.testing.assert_close(vn.denormalize(vn.normalize(x)), x)


def test_percentile_scale_never_goes_below_min_scale():
    vn = PercentileValueNorm()
    vn.update(torch.zeros(10, 1))
    assert vn.scale().item() == 1.0


def test_defaults_follow_torchrl():
    p = PopArtValueNorm()
    assert (p.shape, p.beta, p.epsilon) == ((1,), 0.99999, 1e-5)
    c = PercentileValueNorm()
    assert (c.quantiles, c.rate, c.min_scale, c.center) == ((0.05, 0.95), 0.01, 1.0, False)
    assert RunningValueNorm(shape=(2, 3)).shape == (2, 3)
    with pytest.raises(TypeError):
        ValueNorm()  # abstract


@pytest.mark.parametrize("cls", [PopArtValueNorm, RunningValueNorm, PercentileValueNorm])
def test_wrong_trailing_shape_raises(cls):
    with pytest.raises(
        ValueError, match=r"expected a value whose trailing shape is \(1,\), got shape \(4, 2\)"
    ):
        cls().update(torch.zeros(4, 2))


def test_bad_hyperparameters_raise():
    with pytest.raises(ValueError, match="beta in"):
        PopArtValueNorm(beta=1.0)
    with pytest.raises(ValueError, match="quantiles"):
        PercentileValueNorm(quantiles=(0.9, 0.1))
    with pytest.raises(ValueError, match="rate"):
        PercentileValueNorm(rate=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        RunningValueNorm(epsilon=0.0)


def test_statistics_are_buffers_in_the_state_dict():
    vn = RunningValueNorm()
    vn.update(torch.randn(5, 1))
    other = RunningValueNorm()
    other.load_state_dict(vn.state_dict())
    torch.testing.assert_close(other.mean, vn.mean)
    assert set(PopArtValueNorm().state_dict()) == {
        "running_mean",
        "running_mean_sq",
        "debiasing_term",
    }


def test_popart_update_preserves_the_outputs_of_a_normalised_head():
    """van Hasselt et al. 2016, Algorithm 1: after W <- W s/s', b <- (s b + m - m') / s',
    the real-scale output s' (W' h + b') + m' equals s (W h + b) + m for every h."""
    torch.manual_seed(0)
    head = torch.nn.Linear(5, 1).double()
    vn = PopArtValueNorm(beta=0.8).double()
    vn.update(torch.randn(16, 1, dtype=torch.float64) * 2 + 1)
    h = torch.randn(9, 5, dtype=torch.float64)
    # the old statistics, from the definition
    d = vn.debiasing_term.item()
    m = vn.running_mean.item() / d
    s = math.sqrt(max(vn.running_mean_sq.item() / d - m * m, 1e-5))
    w, b = head.weight.detach().clone(), head.bias.detach().clone()
    before = [s * (h[i] @ w[0] + b[0]).item() + m for i in range(9)]
    target = torch.randn(16, 1, dtype=torch.float64) * 30 - 50  # a far larger scale
    vn.update(target, layer=head)
    d2 = vn.debiasing_term.item()
    m2 = vn.running_mean.item() / d2
    s2 = math.sqrt(max(vn.running_mean_sq.item() / d2 - m2 * m2, 1e-5))
    assert s2 > 3 * s  # the statistics did move
    assert head.weight[0, 0].item() == pytest.approx(w[0, 0].item() * s / s2, rel=1e-12)
    assert head.bias.item() == pytest.approx((s * b.item() + m - m2) / s2, rel=1e-12)
    after = vn.denormalize(head(h).detach()).squeeze(-1).tolist()
    assert after == pytest.approx(before, rel=1e-10)


def test_popart_layer_of_the_wrong_width_raises():
    with pytest.raises(ValueError, match="expected a layer with out_features=1"):
        PopArtValueNorm().update(torch.zeros(3, 1), layer=torch.nn.Linear(2, 2))
