import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import ProbabilisticTensorDictModule

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_core.keys import ACTION, SAMPLE_LOG_PROB
from rl_core.modules.distributions import Delta, TanhDelta

ALL_TYPES = (
    ExplorationType.RANDOM,
    ExplorationType.DETERMINISTIC,
    ExplorationType.MODE,
    ExplorationType.MEAN,
)


class TestDelta:
    def test_default_shapes_take_the_last_dimension_as_the_event(self):
        dist = Delta(torch.zeros(4, 3, 2))
        assert dist.batch_shape == (4, 3)
        assert dist.event_shape == (2,)
        scalar = Delta(torch.tensor(1.5))
        assert scalar.batch_shape == ()
        assert scalar.event_shape == ()

    def test_explicit_shapes(self):
        assert Delta(torch.zeros(4, 3, 2), batch_shape=(4,)).event_shape == (3, 2)
        assert Delta(torch.zeros(4, 3, 2), event_shape=(3, 2)).batch_shape == (4,)
        with pytest.raises(ValueError, match=r"Delta: batch_shape \(4,\) \+ event_shape \(2,\)"):
            Delta(torch.zeros(4, 3, 2), batch_shape=(4,), event_shape=(2,))

    def test_samples_are_the_parameter(self):
        param = torch.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        dist = Delta(param)
        sample = dist.sample((5,))
        assert sample.shape == (5, 2, 2)
        assert not sample.requires_grad
        torch.testing.assert_close(sample[3], param.detach())
        dist.rsample((5,)).sum().backward()
        torch.testing.assert_close(param.grad, torch.full((2, 2), 5.0))
        for value in (dist.mode, dist.mean, dist.deterministic_sample):
            assert value is param

    def test_log_prob_is_zero_on_the_point_and_minus_inf_elsewhere(self):
        param = torch.tensor([[1.0, -2.0], [0.5, 3.0], [0.0, 0.0]])
        dist = Delta(param, atol=1e-3, rtol=0.0)
        value = param + torch.tensor([[5e-4, 0.0], [0.0, 2e-3], [0.0, 0.0]])
        torch.testing.assert_close(dist.log_prob(value), torch.tensor([0.0, -math.inf, 0.0]))
        batched = dist.log_prob(param.expand(7, 3, 2))
        assert batched.shape == (7, 3)
        assert bool((batched == 0).all())

    def test_values_under_each_exploration_type(self):
        param = torch.tensor([[0.25, -0.75]])
        module = ProbabilisticTensorDictModule(
            in_keys=["param"],
            out_keys=[ACTION],
            distribution_class=Delta,
            return_log_prob=True,
        )
        for kind in ALL_TYPES:
            with set_exploration_type(kind):
                out = module(TensorDict({"param": param}, [1]))
            torch.testing.assert_close(out[ACTION], param)
            torch.testing.assert_close(out[SAMPLE_LOG_PROB], torch.zeros(1))


class TestTanhDelta:
    def test_the_point_is_the_squashed_parameter(self):
        param = torch.tensor([[-100.0, 0.0, 0.5]])
        dist = TanhDelta(param, low=torch.tensor([0.0, -2.0, 1.0]), high=torch.tensor(3.0))
        expected = torch.tensor([[0.0, 0.5, 2.0 + math.tanh(0.5)]])
        torch.testing.assert_close(dist.sample(), expected)
        torch.testing.assert_close(dist.deterministic_sample, expected)
        assert dist.pre_tanh_param is param
        assert dist.batch_shape == (1,)
        assert dist.event_shape == (3,)
        torch.testing.assert_close(dist.log_prob(expected), torch.zeros(1))

    def test_rsample_keeps_the_gradient_of_the_tanh(self):
        param = torch.zeros(2, requires_grad=True)
        TanhDelta(param, low=-2.0, high=2.0).rsample().sum().backward()
        torch.testing.assert_close(param.grad, torch.full((2,), 2.0))

    def test_event_dims(self):
        dist = TanhDelta(torch.zeros(4, 3, 2), event_dims=2)
        assert dist.batch_shape == (4,)
        assert dist.event_shape == (3, 2)
        with pytest.raises(ValueError, match=r"TanhDelta: event_dims must be between 0 and"):
            TanhDelta(torch.zeros(2), event_dims=2)

    def test_rejects_bad_bounds(self):
        with pytest.raises(ValueError, match=r"TanhDelta: expected low < high everywhere"):
            TanhDelta(torch.zeros(2), low=torch.tensor([0.0, 1.0]), high=0.5)
        with pytest.raises(ValueError, match=r"TanhDelta: high of shape \(3,\) does not"):
            TanhDelta(torch.zeros(2), high=torch.ones(3))

    def test_values_under_each_exploration_type(self):
        param = torch.tensor([[0.3, -40.0]])
        module = ProbabilisticTensorDictModule(
            in_keys=["param"],
            out_keys=[ACTION],
            distribution_class=TanhDelta,
            distribution_kwargs={"low": -1.0, "high": 5.0},
        )
        expected = 2.0 + 3.0 * torch.tanh(param)
        for kind in ALL_TYPES:
            with set_exploration_type(kind):
                out = module(TensorDict({"param": param}, [1]))
            torch.testing.assert_close(out[ACTION], expected)
