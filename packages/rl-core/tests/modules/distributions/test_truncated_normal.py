import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import ProbabilisticTensorDictModule

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_core.keys import ACTION, LOC, SAMPLE_LOG_PROB, SCALE
from rl_core.modules.distributions import TruncatedNormal

# (loc, scale, low, high): centred, one-sided, far in the upper tail, far in the lower tail.
CASES = [
    (0.2, 1.0, -1.0, 1.5),
    (0.0, 2.0, 0.5, math.inf),
    (0.0, 1.0, 8.0, 9.0),
    (1.0, 0.5, -math.inf, -3.0),
    (30.0, 1.0, -1.0, 1.0),
]


def _grid(low, high, loc, scale, n=400_001):
    lo = low if math.isfinite(low) else loc - 40 * scale
    hi = high if math.isfinite(high) else loc + 40 * scale
    return torch.linspace(lo, hi, n, dtype=torch.float64)


def _dist(loc, scale, low, high, dtype=torch.float64):
    return TruncatedNormal(
        torch.tensor(loc, dtype=dtype), torch.tensor(scale, dtype=dtype), low, high
    )


@pytest.mark.parametrize(("loc", "scale", "low", "high"), CASES)
def test_density_integrates_to_one_and_moments_match_integration(loc, scale, low, high):
    dist = _dist(loc, scale, low, high)
    x = _grid(low, high, loc, scale)
    density = dist.log_prob(x).exp()
    assert abs(torch.trapezoid(density, x).item() - 1.0) < 1e-6
    mean = torch.trapezoid(x * density, x)
    variance = torch.trapezoid((x - mean) ** 2 * density, x)
    entropy = -torch.trapezoid(density * dist.log_prob(x), x)
    torch.testing.assert_close(dist.mean, mean, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(dist.variance, variance, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(dist.entropy(), entropy, atol=1e-5, rtol=1e-5)


def test_log_prob_matches_the_textbook_formula_in_the_bulk():
    loc, scale = torch.tensor([0.3, -1.0]), torch.tensor([1.2, 0.4])
    low, high = torch.tensor([-1.0, -2.0]), torch.tensor([2.0, 0.0])
    value = torch.tensor([0.5, -0.7])
    normal = torch.distributions.Normal(loc.double(), scale.double())
    z = normal.cdf(high.double()) - normal.cdf(low.double())
    expected = normal.log_prob(value.double()) - z.log()
    got = TruncatedNormal(loc, scale, low, high).log_prob(value)
    torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("loc", "scale", "low", "high"), CASES)
def test_samples_stay_inside_and_average_to_the_mean(loc, scale, low, high):
    torch.manual_seed(0)
    dist = _dist(loc, scale, low, high, dtype=torch.float32)
    samples = dist.sample((20_000,))
    assert samples.shape == (20_000,)
    assert bool((samples >= low).all())
    assert bool((samples <= high).all())
    assert dist.log_prob(samples).isfinite().all()
    standard_error = dist.variance.sqrt() / math.sqrt(20_000)
    assert abs(samples.mean() - dist.mean).item() < 5 * standard_error.item() + 1e-5


def test_cdf_and_icdf_are_inverse_and_hit_the_ends():
    for loc, scale, low, high in CASES:
        dist = _dist(loc, scale, low, high)
        u = torch.linspace(0.01, 0.99, 41, dtype=torch.float64)
        torch.testing.assert_close(dist.cdf(dist.icdf(u)), u, atol=1e-8, rtol=1e-6)
        if math.isfinite(low):
            assert dist.cdf(torch.tensor(low, dtype=torch.float64)).item() == 0.0
        if math.isfinite(high):
            assert dist.cdf(torch.tensor(high, dtype=torch.float64)).item() == 1.0


@pytest.mark.parametrize(("low", "high"), [(-1.0, 2.0), (-math.inf, 0.5), (3.0, math.inf)])
def test_gradients_are_finite_with_finite_and_infinite_ends(low, high):
    torch.manual_seed(2)
    loc = torch.tensor([0.0, 1.0, 20.0], requires_grad=True)
    scale = torch.tensor([1.0, 0.5, 0.3], requires_grad=True)
    dist = TruncatedNormal(loc, scale, low, high)
    sample = dist.rsample((64,))
    total = sample.sum() + dist.log_prob(sample.detach()).sum() + dist.mean.sum()
    (total + dist.entropy().sum() + dist.variance.sum()).backward()
    assert loc.grad.isfinite().all()
    assert scale.grad.isfinite().all()
    assert bool((loc.grad != 0).all())


def test_mode_is_loc_clamped_into_the_interval():
    dist = TruncatedNormal(torch.tensor([-5.0, 0.5, 5.0]), torch.ones(3), -1.0, 1.0)
    torch.testing.assert_close(dist.mode, torch.tensor([-1.0, 0.5, 1.0]))


def test_log_prob_outside_the_interval():
    dist = TruncatedNormal(torch.zeros(2), torch.ones(2), -1.0, 1.0, validate_args=False)
    assert dist.log_prob(torch.tensor([1.5, -2.0])).eq(-math.inf).all()
    with pytest.raises(ValueError, match="support"):
        TruncatedNormal(torch.zeros(2), torch.ones(2), -1.0, 1.0).log_prob(torch.full((2,), 3.0))


def test_rejects_inverted_bounds():
    with pytest.raises(ValueError, match=r"TruncatedNormal: expected low < high everywhere"):
        TruncatedNormal(torch.zeros(2), torch.ones(2), torch.tensor([0.0, 1.0]), 0.5)


def test_rejects_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"TruncatedNormal: loc \(2,\), scale \(3,\)"):
        TruncatedNormal(torch.zeros(2), torch.ones(3))


def test_values_under_each_exploration_type():
    torch.manual_seed(1)
    td = TensorDict({LOC: torch.randn(4, 2) * 2, SCALE: torch.rand(4, 2) + 0.3}, [4])
    module = ProbabilisticTensorDictModule(
        in_keys=[LOC, SCALE],
        out_keys=[ACTION],
        distribution_class=TruncatedNormal,
        distribution_kwargs={"low": -1.0, "high": 1.0},
        return_log_prob=True,
    )
    dist = TruncatedNormal(td[LOC], td[SCALE], -1.0, 1.0)
    expected = {
        ExplorationType.DETERMINISTIC: dist.mean,
        ExplorationType.MEAN: dist.mean,
        ExplorationType.MODE: td[LOC].clamp(-1.0, 1.0),
    }
    for kind, value in expected.items():
        with set_exploration_type(kind):
            out = module(td.clone())
        torch.testing.assert_close(out[ACTION], value)
        torch.testing.assert_close(out[SAMPLE_LOG_PROB], dist.log_prob(value))
    with set_exploration_type(ExplorationType.RANDOM):
        out = module(td.clone())
    assert bool(out[ACTION].abs().le(1.0).all())
    assert not torch.equal(out[ACTION], dist.mean)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_truncated_normal_on_cuda():
    loc = torch.tensor([0.0, 30.0], device="cuda")
    dist = TruncatedNormal(loc, torch.ones(2, device="cuda"), -1.0, 1.0)
    samples = dist.sample((1000,))
    assert samples.device.type == "cuda"
    assert samples.dtype == torch.float32
    assert bool(samples.abs().le(1.0).all())
    assert dist.log_prob(samples).isfinite().all()
