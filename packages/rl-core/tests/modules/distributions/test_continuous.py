import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import ProbabilisticTensorDictModule

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_core.keys import ACTION, LOC, SAMPLE_LOG_PROB, SCALE
from rl_core.modules.distributions import IndependentNormal, TanhNormal


def _reference_log_prob(y, loc, scale, low, high):
    """float64 log-density of the squashed Gaussian, written out by hand."""
    y, loc, scale = (torch.as_tensor(v, dtype=torch.float64) for v in (y, loc, scale))
    low, high = (torch.as_tensor(v, dtype=torch.float64) for v in (low, high))
    half, center = (high - low) / 2, (high + low) / 2
    t = (y - center) / half
    x = torch.atanh(t)
    normal = -0.5 * ((x - loc) / scale) ** 2 - scale.log() - 0.5 * math.log(2 * math.pi)
    return (normal - torch.log1p(-(t**2)) - half.log()).sum(-1)


def _module(distribution_class, **kwargs):
    return ProbabilisticTensorDictModule(
        in_keys=[LOC, SCALE],
        out_keys=[ACTION],
        distribution_class=distribution_class,
        distribution_kwargs=kwargs,
        return_log_prob=True,
    )


class TestTanhNormal:
    def test_shapes_and_samples_inside_bounds(self):
        torch.manual_seed(0)
        low, high = torch.tensor([-2.0, 0.0, 5.0]), torch.tensor([1.0, 0.5, 9.0])
        dist = TanhNormal(torch.randn(7, 3) * 5, torch.rand(7, 3) * 3 + 0.1, low, high)
        assert dist.batch_shape == (7,)
        assert dist.event_shape == (3,)
        action = dist.rsample((11,))
        assert action.shape == (11, 7, 3)
        # The affine map may round a saturated sample onto a bound, never past it.
        assert bool((action >= low).all())
        assert bool((action <= high).all())
        assert dist.log_prob(action).shape == (11, 7)
        assert dist.log_prob(action).isfinite().all()

    @pytest.mark.parametrize("event_dims", [0, 1, 2])
    def test_event_dims_sets_the_log_prob_shape(self, event_dims):
        dist = TanhNormal(torch.zeros(4, 3, 2), torch.ones(4, 3, 2), event_dims=event_dims)
        assert dist.log_prob(dist.sample()).shape == torch.Size([4, 3, 2])[: 3 - event_dims]

    def test_log_prob_is_finite_exactly_on_the_bounds_in_float32(self):
        loc = torch.tensor([[0.3, -4.0, 8.0], [0.0, 0.0, 0.0]])
        scale = torch.tensor([[0.5, 0.1, 2.0], [1e-3, 1.0, 5.0]])
        unit = TanhNormal(loc, scale)
        for value in (1.0, -1.0):
            assert unit.log_prob(torch.full((2, 3), value)).isfinite().all()
        low, high = torch.tensor([-3.0, 0.0, 10.0]), torch.tensor([2.0, 1e-3, 10.5])
        boxed = TanhNormal(loc, scale, low, high)
        for bound in (low, high):
            assert boxed.log_prob(bound.expand(2, 3)).isfinite().all()

    def test_log_prob_matches_a_float64_reference_away_from_the_bounds(self):
        torch.manual_seed(1)
        loc, scale = torch.randn(64, 3), torch.rand(64, 3) + 0.05
        low, high = torch.tensor([-1.0, -5.0, 2.0]), torch.tensor([1.0, 3.0, 2.5])
        t = torch.rand(64, 3) * 1.98 - 0.99
        y = (high + low) / 2 + (high - low) / 2 * t
        got = TanhNormal(loc, scale, low, high).log_prob(y)
        expected = _reference_log_prob(y, loc, scale, low, high)
        torch.testing.assert_close(got.double(), expected, atol=1e-4, rtol=1e-5)

    def test_rsample_and_log_prob_scores_saturated_draws_exactly(self):
        torch.manual_seed(2)
        loc, scale = torch.tensor([[30.0, -0.2]]), torch.tensor([[0.5, 0.3]])
        dist = TanhNormal(loc, scale)
        action, log_prob = dist.rsample_and_log_prob((1000,))
        assert action.shape == (1000, 1, 2)
        assert log_prob.shape == (1000, 1)
        assert log_prob.isfinite().all()
        # The saturated coordinate's density is enormous: scoring atanh of the clamped action
        # would give a different (wrong) number; the joint method keeps the true pre-image.
        clamped_score = TanhNormal(loc, scale).log_prob(action)
        assert not torch.allclose(log_prob, clamped_score)

    def test_rsample_and_log_prob_agrees_with_log_prob_off_saturation(self):
        torch.manual_seed(3)
        dist = TanhNormal(torch.randn(5, 2) * 0.5, torch.rand(5, 2) + 0.2, -3.0, 4.0)
        action, log_prob = dist.rsample_and_log_prob()
        fresh = TanhNormal(dist.loc, dist.scale, -3.0, 4.0)
        torch.testing.assert_close(log_prob, fresh.log_prob(action), atol=1e-4, rtol=1e-5)
        _, no_grad_log_prob = dist.sample_and_log_prob()
        assert not no_grad_log_prob.requires_grad

    def test_rsample_is_differentiable(self):
        loc = torch.zeros(3, 2, requires_grad=True)
        scale = torch.ones(3, 2, requires_grad=True)
        dist = TanhNormal(loc, scale, low=0.0, high=2.0)
        action = dist.rsample()
        (action.sum() + dist.log_prob(action).sum()).backward()
        assert loc.grad is not None
        assert loc.grad.isfinite().all()
        assert scale.grad is not None
        assert scale.grad.isfinite().all()

    def test_deterministic_sample_is_the_squashed_loc(self):
        loc = torch.tensor([[-1.0, 0.0, 2.0]])
        dist = TanhNormal(loc, torch.ones(1, 3), low=0.0, high=4.0)
        torch.testing.assert_close(dist.deterministic_sample, 2.0 + 2.0 * torch.tanh(loc))

    @pytest.mark.parametrize(
        ("loc", "scale"), [(0.4, 0.2), (-0.3, 0.7), (0.5, 1.5), (-1.0, 3.0), (2.0, 0.05)]
    )
    def test_mode_is_the_argmax_of_the_density(self, loc, scale):
        dist = TanhNormal(
            torch.tensor([loc], dtype=torch.float64),
            torch.tensor([scale], dtype=torch.float64),
            low=-2.0,
            high=6.0,
            event_dims=0,
        )
        grid = torch.linspace(-2.0, 6.0, 400_001, dtype=torch.float64)[1:-1]
        brute = grid[dist.log_prob(grid.unsqueeze(-1)).argmax()]
        assert abs(dist.mode.item() - brute.item()) < 1e-4 + 1e-4 * abs(brute.item())

    def test_mode_of_a_wide_symmetric_distribution_sits_on_a_bound(self):
        dist = TanhNormal(torch.zeros(1), torch.full((1,), 3.0), event_dims=0)
        assert abs(dist.mode.abs().item() - 1.0) < 1e-6

    @pytest.mark.parametrize(("loc", "scale"), [(0.3, 0.2), (-1.2, 1.0), (2.0, 3.0), (0.5, 10.0)])
    def test_mean_matches_numerical_integration(self, loc, scale):
        dist = TanhNormal(
            torch.tensor([loc], dtype=torch.float64),
            torch.tensor([scale], dtype=torch.float64),
            low=1.0,
            high=3.0,
            event_dims=0,
        )
        x = torch.linspace(loc - 12 * scale, loc + 12 * scale, 200_001, dtype=torch.float64)
        density = torch.exp(-0.5 * ((x - loc) / scale) ** 2) / (scale * math.sqrt(2 * math.pi))
        expected = torch.trapezoid((2.0 + torch.tanh(x)) * density, x)
        assert abs(dist.mean.item() - expected.item()) < 1e-6

    def test_tanh_loc_soft_clips_the_location(self):
        dist = TanhNormal(torch.tensor([100.0]), torch.ones(1), tanh_loc=True, upscale=2.0)
        torch.testing.assert_close(dist.loc, torch.tensor([2.0 * math.tanh(50.0)]))

    def test_unsafe_tanh_gives_non_finite_log_prob_on_the_bounds(self):
        dist = TanhNormal(torch.zeros(1, 2), torch.ones(1, 2), safe_tanh=False)
        assert not dist.log_prob(torch.ones(1, 2)).isfinite().any()

    def test_rejects_inverted_bounds(self):
        with pytest.raises(ValueError, match=r"TanhNormal: expected low < high everywhere"):
            TanhNormal(torch.zeros(2), torch.ones(2), low=1.0, high=1.0)

    def test_tensor_bounds_are_checked_only_with_validation_on(self):
        # Comparing tensor values syncs with the device: skipped when validation is off.
        low, high = torch.ones(2), torch.zeros(2)
        TanhNormal(torch.zeros(2), torch.ones(2), low, high, validate_args=False)
        with pytest.raises(ValueError, match=r"TanhNormal: expected low < high everywhere"):
            TanhNormal(torch.zeros(2), torch.ones(2), low, high, validate_args=True)
        with pytest.raises(ValueError, match=r"got low=2.0 and high=1.0"):
            TanhNormal(torch.zeros(2), torch.ones(2), 2.0, 1.0, validate_args=False)

    def test_rejects_bounds_that_do_not_broadcast(self):
        with pytest.raises(ValueError, match=r"TanhNormal: low of shape \(3,\) does not broad"):
            TanhNormal(torch.zeros(4, 2), torch.ones(4, 2), low=-torch.ones(3))

    def test_rejects_bad_event_dims(self):
        with pytest.raises(ValueError, match=r"event_dims must be between 0 and loc.dim\(\)=2"):
            TanhNormal(torch.zeros(4, 2), torch.ones(4, 2), event_dims=3)
        with pytest.raises(TypeError, match=r"TanhNormal: event_dims must be an int, got bool"):
            TanhNormal(torch.zeros(4, 2), torch.ones(4, 2), event_dims=True)

    def test_values_under_each_exploration_type(self):
        torch.manual_seed(4)
        td = TensorDict({LOC: torch.randn(5, 2), SCALE: torch.rand(5, 2) + 0.5}, [5])
        module = _module(TanhNormal, low=-2.0, high=3.0)
        dist = TanhNormal(td[LOC], td[SCALE], -2.0, 3.0)
        expected = {
            ExplorationType.DETERMINISTIC: dist.deterministic_sample,
            ExplorationType.MODE: dist.mode,
            ExplorationType.MEAN: dist.mean,
        }
        for kind, value in expected.items():
            with set_exploration_type(kind):
                out = module(td.clone())
            torch.testing.assert_close(out[ACTION], value)
            torch.testing.assert_close(out[SAMPLE_LOG_PROB], dist.log_prob(value))
        with set_exploration_type(ExplorationType.RANDOM):
            first, second = module(td.clone()), module(td.clone())
        assert not torch.equal(first[ACTION], second[ACTION])
        assert bool((first[ACTION] > -2).all())
        assert bool((first[ACTION] < 3).all())
        torch.testing.assert_close(
            first[SAMPLE_LOG_PROB], dist.log_prob(first[ACTION]), atol=1e-4, rtol=1e-5
        )


class TestIndependentNormal:
    def test_log_prob_sums_over_the_event(self):
        torch.manual_seed(5)
        loc, scale = torch.randn(4, 3, 2), torch.rand(4, 3, 2) + 0.1
        value = torch.randn(4, 3, 2)
        dist = IndependentNormal(loc, scale, event_dims=2)
        assert dist.batch_shape == (4,)
        assert dist.event_shape == (3, 2)
        expected = torch.distributions.Normal(loc, scale).log_prob(value).sum((-1, -2))
        torch.testing.assert_close(dist.log_prob(value), expected)

    def test_mode_mean_and_deterministic_sample_are_loc(self):
        loc = torch.tensor([[1.0, -2.0]])
        dist = IndependentNormal(loc, torch.tensor([[0.5, 3.0]]))
        for value in (dist.mode, dist.mean, dist.deterministic_sample, dist.loc):
            torch.testing.assert_close(value, loc)
        torch.testing.assert_close(dist.scale, torch.tensor([[0.5, 3.0]]))

    def test_rsample_is_differentiable(self):
        loc = torch.zeros(2, requires_grad=True)
        IndependentNormal(loc, torch.ones(2)).rsample().sum().backward()
        torch.testing.assert_close(loc.grad, torch.ones(2))

    def test_rejects_bad_event_dims(self):
        with pytest.raises(ValueError, match=r"IndependentNormal: event_dims must be between"):
            IndependentNormal(torch.zeros(2), torch.ones(2), event_dims=2)

    def test_values_under_each_exploration_type(self):
        torch.manual_seed(6)
        td = TensorDict({LOC: torch.randn(3, 2), SCALE: torch.rand(3, 2) + 0.5}, [3])
        module = _module(IndependentNormal)
        for kind in (ExplorationType.DETERMINISTIC, ExplorationType.MODE, ExplorationType.MEAN):
            with set_exploration_type(kind):
                torch.testing.assert_close(module(td.clone())[ACTION], td[LOC])
        with set_exploration_type(ExplorationType.RANDOM):
            out = module(td.clone())
        assert not torch.equal(out[ACTION], td[LOC])
        expected = IndependentNormal(td[LOC], td[SCALE]).log_prob(out[ACTION])
        torch.testing.assert_close(out[SAMPLE_LOG_PROB], expected)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_tanh_normal_on_cuda():
    loc, scale = torch.randn(4, 2, device="cuda"), torch.rand(4, 2, device="cuda") + 0.1
    dist = TanhNormal(loc, scale, low=torch.tensor([-1.0, 0.0], device="cuda"), high=2.0)
    action, log_prob = dist.rsample_and_log_prob()
    for value in (action, log_prob, dist.mode, dist.mean, dist.deterministic_sample):
        assert value.device.type == "cuda"
        assert value.isfinite().all()
