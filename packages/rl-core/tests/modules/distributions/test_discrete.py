import math

import pytest
import torch
import torch.nn.functional as F
from tensordict import TensorDict
from tensordict.nn import ProbabilisticTensorDictModule

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_core.keys import ACTION, ACTION_MASK, LOGITS, SAMPLE_LOG_PROB
from rl_core.modules.distributions import (
    MaskedCategorical,
    MaskedOneHotCategorical,
    OneHotCategorical,
    ReparamGradientStrategy,
)

# Each row allows a different set of actions; the logits favour masked-out actions.
MASK = torch.tensor(
    [
        [True, False, True, False, False],
        [False, False, False, True, False],
        [True, True, True, True, True],
        [False, True, False, False, True],
    ]
)
LOGITS_ = torch.tensor(
    [
        [0.0, 9.0, 1.0, 9.0, 9.0],
        [9.0, 9.0, 9.0, -3.0, 9.0],
        [0.0, 0.5, 3.0, 0.1, 0.2],
        [9.0, -1.0, 9.0, 9.0, 2.0],
    ]
)
MODE = torch.tensor([2, 3, 2, 4])


def _module(distribution_class, *, return_log_prob=True, **kwargs):
    return ProbabilisticTensorDictModule(
        in_keys={"logits": LOGITS, "mask": ACTION_MASK},
        out_keys=[ACTION],
        distribution_class=distribution_class,
        distribution_kwargs=kwargs,
        return_log_prob=return_log_prob,
    )


def _td():
    return TensorDict({LOGITS: LOGITS_, ACTION_MASK: MASK}, [4])


class TestOneHotCategorical:
    def test_mode_and_deterministic_sample_are_the_argmax(self):
        dist = OneHotCategorical(logits=LOGITS_)
        expected = F.one_hot(LOGITS_.argmax(-1), 5).float()
        torch.testing.assert_close(dist.mode, expected)
        torch.testing.assert_close(dist.deterministic_sample, expected)
        torch.testing.assert_close(dist.mean, LOGITS_.softmax(-1))

    def test_probs_are_accepted(self):
        dist = OneHotCategorical(probs=torch.tensor([0.2, 0.8]))
        torch.testing.assert_close(dist.mode, torch.tensor([0.0, 1.0]))

    def test_pass_through_rsample_is_one_hot_and_carries_the_gradient_of_probs(self):
        torch.manual_seed(0)
        logits = torch.randn(6, 4, requires_grad=True)
        dist = OneHotCategorical(logits=logits)
        assert dist.has_rsample
        sample = dist.rsample((3,))
        assert sample.shape == (3, 6, 4)
        assert bool((sample.sum(-1) == 1).all())
        assert bool(((sample == 0) | (sample == 1)).all())
        weights = torch.arange(4.0)
        (sample * weights).sum().backward()
        probs = logits.detach().softmax(-1)
        expected = 3 * probs * (weights - (probs * weights).sum(-1, keepdim=True))
        torch.testing.assert_close(logits.grad, expected)

    def test_relaxed_rsample_lies_on_the_simplex(self):
        torch.manual_seed(1)
        logits = torch.randn(5, 3, requires_grad=True)
        dist = OneHotCategorical(
            logits=logits, grad_method=ReparamGradientStrategy.RelaxedOneHot, temperature=0.5
        )
        sample = dist.rsample()
        torch.testing.assert_close(sample.sum(-1), torch.ones(5))
        assert not bool(((sample == 0) | (sample == 1)).all())
        sample[:, 0].sum().backward()
        assert logits.grad.abs().sum() > 0

    def test_no_rsample_without_grad_method(self):
        dist = OneHotCategorical(logits=torch.zeros(3), grad_method=None)
        assert not dist.has_rsample
        with pytest.raises(ValueError, match=r"OneHotCategorical.rsample: built with grad_met"):
            dist.rsample()

    def test_rejects_both_or_neither_parameter(self):
        with pytest.raises(ValueError, match=r"OneHotCategorical: pass exactly one of logits"):
            OneHotCategorical()
        with pytest.raises(ValueError, match=r"OneHotCategorical: pass exactly one of logits"):
            OneHotCategorical(logits=torch.zeros(2), probs=torch.ones(2) / 2)

    @staticmethod
    def _module(*, return_log_prob):
        return ProbabilisticTensorDictModule(
            in_keys=[LOGITS],
            out_keys=[ACTION],
            distribution_class=OneHotCategorical,
            return_log_prob=return_log_prob,
        )

    def test_values_under_each_exploration_type(self):
        module = self._module(return_log_prob=True)
        td = TensorDict({LOGITS: LOGITS_}, [4])
        mode = F.one_hot(LOGITS_.argmax(-1), 5).float()
        for kind in (ExplorationType.DETERMINISTIC, ExplorationType.MODE):
            with set_exploration_type(kind):
                out = module(td.clone())
            torch.testing.assert_close(out[ACTION], mode)
            torch.testing.assert_close(out[SAMPLE_LOG_PROB], LOGITS_.log_softmax(-1).max(-1)[0])
        with set_exploration_type(ExplorationType.MEAN):
            soft = self._module(return_log_prob=False)(td.clone())[ACTION]
            torch.testing.assert_close(soft, LOGITS_.softmax(-1))
            # A soft action is outside the one-hot support: it has no log-probability.
            with pytest.raises(ValueError, match="support"):
                module(td.clone())
        torch.manual_seed(2)
        with set_exploration_type(ExplorationType.RANDOM):
            out = module(td.clone())
        assert bool((out[ACTION].sum(-1) == 1).all())
        expected = LOGITS_.log_softmax(-1).gather(-1, out[ACTION].argmax(-1, keepdim=True))
        torch.testing.assert_close(out[SAMPLE_LOG_PROB], expected.squeeze(-1))


class TestMaskedCategorical:
    def test_masked_actions_have_zero_probability_and_minus_inf_log_prob(self):
        dist = MaskedCategorical(logits=LOGITS_, mask=MASK)
        assert bool((dist.probs[~MASK] == 0).all())
        torch.testing.assert_close(dist.probs.sum(-1), torch.ones(4))
        log_prob = dist.log_prob(torch.tensor([1, 0, 4, 0]))
        assert log_prob[[0, 1, 3]].eq(-math.inf).all()
        assert log_prob[2].isfinite()

    def test_samples_are_always_valid_with_different_masks_per_row(self):
        torch.manual_seed(3)
        dist = MaskedCategorical(logits=LOGITS_, mask=MASK)
        samples = dist.sample((5_000,))
        assert samples.shape == (5_000, 4)
        assert bool(MASK.gather(-1, samples.T).all())
        # Every valid action of the uniform-ish row 2 shows up.
        assert set(samples[:, 2].tolist()) == {0, 1, 2, 3, 4}

    def test_entropy_ignores_masked_actions(self):
        dist = MaskedCategorical(logits=LOGITS_, mask=MASK)
        for row in range(4):
            valid = LOGITS_[row][MASK[row]]
            expected = torch.distributions.Categorical(logits=valid).entropy()
            torch.testing.assert_close(dist.entropy()[row], expected)
        assert dist.entropy()[1] == 0

    def test_mode_respects_the_mask(self):
        dist = MaskedCategorical(logits=LOGITS_, mask=MASK)
        torch.testing.assert_close(dist.mode, MODE)
        torch.testing.assert_close(dist.deterministic_sample, MODE)

    def test_sparse_indices_with_padding_equal_the_dense_mask(self):
        indices = torch.tensor([[0, 2, -1], [3, -1, -1], [0, 1, 2], [4, 1, 4]])
        logits = LOGITS_[:, :5].clone()
        sparse = MaskedCategorical(logits=logits, indices=indices, padding_value=-1)
        expected_mask = MASK.clone()
        expected_mask[2] = torch.tensor([True, True, True, False, False])
        assert torch.equal(sparse.mask, expected_mask)
        dense = MaskedCategorical(logits=logits, mask=expected_mask)
        torch.testing.assert_close(sparse.probs, dense.probs)

    def test_probs_and_finite_neg_inf(self):
        probs = torch.tensor([[0.5, 0.3, 0.2]])
        mask = torch.tensor([[True, False, True]])
        dist = MaskedCategorical(probs=probs, mask=mask, neg_inf=-1e9)
        torch.testing.assert_close(dist.probs, torch.tensor([[0.5 / 0.7, 0.0, 0.2 / 0.7]]))
        masked_log_prob = dist.log_prob(torch.tensor([1]))
        assert masked_log_prob.isfinite().all()
        assert masked_log_prob.item() < -1e8

    def test_mask_broadcasts_over_the_batch(self):
        dist = MaskedCategorical(logits=torch.zeros(6, 3), mask=torch.tensor([True, False, True]))
        assert dist.batch_shape == (6,)
        assert bool((dist.probs[:, 1] == 0).all())

    def test_mean_is_undefined(self):
        with pytest.raises(ValueError, match=r"MaskedCategorical.mean: the actions are unordered"):
            _ = MaskedCategorical(logits=LOGITS_, mask=MASK).mean

    @pytest.mark.parametrize(
        ("kwargs", "error", "message"),
        [
            ({"mask": MASK.float()}, TypeError, r"mask must be a boolean tensor, got torch.float"),
            ({"mask": MASK[:, :3]}, ValueError, r"mask must end with the number of actions 5"),
            ({"mask": MASK, "indices": MODE[:, None]}, ValueError, r"pass exactly one of mask"),
            ({}, ValueError, r"pass exactly one of mask"),
            ({"mask": MASK & False}, ValueError, r"every row of the mask needs at least one"),
            ({"indices": MODE[:, None].float()}, TypeError, r"indices must be an integer tensor"),
            ({"indices": MODE[:, None] + 3}, ValueError, r"indices must lie in \[0, 5\)"),
        ],
    )
    def test_rejects_bad_masks(self, kwargs, error, message):
        with pytest.raises(error, match=rf"MaskedCategorical: {message}"):
            MaskedCategorical(logits=LOGITS_, **kwargs)

    def test_values_under_each_exploration_type(self):
        module = _module(MaskedCategorical)
        for kind in (ExplorationType.DETERMINISTIC, ExplorationType.MODE):
            with set_exploration_type(kind):
                torch.testing.assert_close(module(_td())[ACTION], MODE)
        with (
            set_exploration_type(ExplorationType.MEAN),
            pytest.raises(ValueError, match=r"MaskedCategorical.mean: the actions are unordered"),
        ):
            module(_td())
        torch.manual_seed(4)
        with set_exploration_type(ExplorationType.RANDOM):
            for _ in range(50):
                out = module(_td())
                assert bool(MASK.gather(-1, out[ACTION][:, None]).all())
                assert out[SAMPLE_LOG_PROB].isfinite().all()


class TestMaskedOneHotCategorical:
    def test_masking_sampling_and_log_prob(self):
        torch.manual_seed(5)
        dist = MaskedOneHotCategorical(logits=LOGITS_, mask=MASK)
        samples = dist.sample((2_000,))
        assert bool((samples * ~MASK).eq(0).all())
        assert (
            dist.log_prob(F.one_hot(torch.tensor([1, 0, 4, 0]), 5).float())[[0, 1, 3]]
            .eq(-math.inf)
            .all()
        )
        torch.testing.assert_close(dist.mode, F.one_hot(MODE, 5).float())
        torch.testing.assert_close(dist.mean, MaskedCategorical(logits=LOGITS_, mask=MASK).probs)

    def test_pass_through_rsample_stays_valid(self):
        logits = LOGITS_.clone().requires_grad_(True)
        sample = MaskedOneHotCategorical(logits=logits, mask=MASK).rsample((100,))
        assert bool((sample * ~MASK).eq(0).all())
        sample[..., 0].sum().backward()
        assert logits.grad.isfinite().all()

    def test_sparse_indices(self):
        dist = MaskedOneHotCategorical(logits=torch.zeros(2, 4), indices=torch.tensor([[1], [3]]))
        torch.testing.assert_close(dist.mode, torch.tensor([[0.0, 1, 0, 0], [0, 0, 0, 1]]))

    def test_values_under_each_exploration_type(self):
        module = _module(MaskedOneHotCategorical)
        for kind in (ExplorationType.DETERMINISTIC, ExplorationType.MODE):
            with set_exploration_type(kind):
                torch.testing.assert_close(module(_td())[ACTION], F.one_hot(MODE, 5).float())
        probs = MaskedCategorical(logits=LOGITS_, mask=MASK).probs
        with set_exploration_type(ExplorationType.MEAN):
            out = _module(MaskedOneHotCategorical, return_log_prob=False)(_td())
        torch.testing.assert_close(out[ACTION], probs)
        torch.manual_seed(6)
        with set_exploration_type(ExplorationType.RANDOM):
            for _ in range(50):
                out = module(_td())
                assert bool((out[ACTION] * ~MASK).eq(0).all())
                assert out[SAMPLE_LOG_PROB].isfinite().all()
