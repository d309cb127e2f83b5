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
